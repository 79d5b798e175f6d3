//! Explicit finite differences (FTCS) for u_t = α u_xx on [0, L].
//!
//! Grid: `cells` intervals, `cells + 1` nodes, dx = L / cells. One step:
//! u_i ← u_i + r (u_{i-1} − 2 u_i + u_{i+1}) with r = α dt / dx². The scheme
//! is stable for r ≤ 1/2, which the solver enforces.
//!
//! Boundaries: Dirichlet holds both ends at 0; Neumann (zero flux) mirrors a
//! ghost node, u_{-1} = u_1. Initial conditions with an analytic solution:
//! `sine` (mode k) under Dirichlet, `cosine` (mode k) under Neumann, both
//! decaying as exp(−α (kπ/L)² t).

use std::f64::consts::PI;

/// Boundary condition at both ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    Dirichlet,
    Neumann,
}

/// Initial profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Initial {
    Sine { mode: u32 },
    Cosine { mode: u32 },
    Gaussian,
    Step,
}

/// A complete, checked problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub cells: usize,
    pub steps: u64,
    pub length: f64,
    pub alpha: f64,
    pub dt: f64,
    pub boundary: Boundary,
    pub initial: Initial,
}

/// Largest Courant number r = α dt / dx² of a stable explicit step.
pub const MAX_COURANT: f64 = 0.5;

impl Problem {
    pub fn dx(&self) -> f64 {
        self.length / self.cells as f64
    }

    pub fn courant(&self) -> f64 {
        self.alpha * self.dt / (self.dx() * self.dx())
    }

    pub fn t_final(&self) -> f64 {
        self.dt * self.steps as f64
    }

    pub fn x(&self, i: usize) -> f64 {
        self.length * i as f64 / self.cells as f64
    }

    pub fn initial_value(&self, x: f64) -> f64 {
        let l = self.length;
        match self.initial {
            Initial::Sine { mode } => (mode as f64 * PI * x / l).sin(),
            Initial::Cosine { mode } => (mode as f64 * PI * x / l).cos(),
            Initial::Gaussian => {
                let s = 0.05 * l;
                (-((x - 0.5 * l) / s).powi(2) / 2.0).exp()
            }
            Initial::Step => {
                if (0.25 * l..=0.75 * l).contains(&x) {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }

    /// The exact solution at time `t`, where the problem has one.
    pub fn analytic(&self, x: f64, t: f64) -> Option<f64> {
        let decay = |mode: u32| {
            let k = mode as f64 * PI / self.length;
            (-self.alpha * k * k * t).exp()
        };
        match (self.initial, self.boundary) {
            (Initial::Sine { mode }, Boundary::Dirichlet) => {
                Some(decay(mode) * self.initial_value(x))
            }
            (Initial::Cosine { mode }, Boundary::Neumann) => {
                Some(decay(mode) * self.initial_value(x))
            }
            _ => None,
        }
    }
}

/// Runs the scheme, calling `progress(done)` every `every` steps.
pub fn solve(p: &Problem, every: u64, mut progress: impl FnMut(u64)) -> Vec<f64> {
    let n = p.cells + 1;
    let r = p.courant();
    let mut u: Vec<f64> = (0..n).map(|i| p.initial_value(p.x(i))).collect();
    if p.boundary == Boundary::Dirichlet {
        u[0] = 0.0;
        u[n - 1] = 0.0;
    }
    let mut next = u.clone();
    for step in 1..=p.steps {
        for i in 1..n - 1 {
            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        match p.boundary {
            Boundary::Dirichlet => {
                next[0] = 0.0;
                next[n - 1] = 0.0;
            }
            Boundary::Neumann => {
                next[0] = u[0] + 2.0 * r * (u[1] - u[0]);
                next[n - 1] = u[n - 1] + 2.0 * r * (u[n - 2] - u[n - 1]);
            }
        }
        std::mem::swap(&mut u, &mut next);
        if every > 0 && step % every == 0 {
            progress(step);
        }
    }
    u
}

/// Error norms against the analytic solution at t_final, if there is one:
/// (discrete L2 norm scaled by sqrt(dx), max norm).
pub fn error_norms(p: &Problem, u: &[f64]) -> Option<(f64, f64)> {
    let t = p.t_final();
    let mut sq = 0.0;
    let mut max: f64 = 0.0;
    for (i, ui) in u.iter().enumerate() {
        let e = (ui - p.analytic(p.x(i), t)?).abs();
        sq += e * e;
        max = max.max(e);
    }
    Some(((sq * p.dx()).sqrt(), max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(cells: usize, boundary: Boundary, initial: Initial) -> Problem {
        // Fixed Courant number 0.25 and fixed final time 0.05: refining dx
        // by 2 quarters dt and so quadruples the step count.
        let (length, alpha, t_final, r) = (1.0, 1.0, 0.05, 0.25);
        let dx = length / cells as f64;
        let dt = r * dx * dx / alpha;
        let steps = (t_final / dt).round() as u64;
        Problem {
            cells,
            steps,
            length,
            alpha,
            dt: t_final / steps as f64,
            boundary,
            initial,
        }
    }

    fn converges(boundary: Boundary, initial: Initial) {
        let errs: Vec<f64> = [16, 32, 64]
            .iter()
            .map(|&c| {
                let p = problem(c, boundary, initial);
                let u = solve(&p, 0, |_| {});
                error_norms(&p, &u).unwrap().1
            })
            .collect();
        // Second order in space: each halving of dx divides the error by ~4.
        for w in errs.windows(2) {
            let ratio = w[0] / w[1];
            assert!((3.5..4.5).contains(&ratio), "ratio {ratio} from {errs:?}");
        }
        assert!(errs[2] < 1e-3, "{errs:?}");
    }

    #[test]
    fn dirichlet_sine_converges_at_second_order() {
        converges(Boundary::Dirichlet, Initial::Sine { mode: 1 });
        converges(Boundary::Dirichlet, Initial::Sine { mode: 2 });
    }

    #[test]
    fn neumann_cosine_converges_at_second_order() {
        converges(Boundary::Neumann, Initial::Cosine { mode: 1 });
    }

    #[test]
    fn neumann_conserves_heat() {
        let p = problem(50, Boundary::Neumann, Initial::Step);
        let u = solve(&p, 0, |_| {});
        // Trapezoid rule integral is conserved exactly by the mirrored scheme.
        let integral = |v: &[f64]| {
            let n = v.len() - 1;
            p.dx() * (v[1..n].iter().sum::<f64>() + 0.5 * (v[0] + v[n]))
        };
        let u0: Vec<f64> = (0..=p.cells).map(|i| p.initial_value(p.x(i))).collect();
        assert!((integral(&u) - integral(&u0)).abs() < 1e-12);
    }

    #[test]
    fn no_analytic_solution_for_other_pairs() {
        let p = problem(8, Boundary::Neumann, Initial::Sine { mode: 1 });
        assert!(error_norms(&p, &solve(&p, 0, |_| {})).is_none());
    }

    #[test]
    fn progress_is_reported_at_the_interval() {
        let mut p = problem(8, Boundary::Dirichlet, Initial::Gaussian);
        p.steps = 10;
        let mut seen = vec![];
        solve(&p, 4, |s| seen.push(s));
        assert_eq!(seen, vec![4, 8]);
    }
}
