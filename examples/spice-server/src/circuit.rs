//! The circuit catalogue: three fixed templates whose netlists the deck
//! writer builds from validated numbers only, the analyses, and the figures
//! derived from a simulation (−3 dB points, resonance, rise time). No text
//! of the caller ever reaches a netlist.

use hardened_mcp::deck::{Deck, DeckError, DeckValue, Spice};
use hardened_mcp::prelude::{HardenedArgs, ToolEnum};
use schemars::JsonSchema;
use serde::Serialize;

use crate::raw::Plot;

/// The diode of the clipper: saturation current (A) and emission
/// coefficient of its `.model` line.
pub const DIODE_IS: f64 = 1e-14;
/// Emission coefficient of the clipper's diode.
pub const DIODE_N: f64 = 1.0;
/// Thermal voltage kT/q at ngspice's default 27 °C, in volts.
pub const THERMAL_VOLTAGE: f64 = 1.380_649e-23 * 300.15 / 1.602_176_634e-19;

/// A circuit of the catalogue. Every template is driven by the source `V1`
/// between node `in` and ground and observed at node `out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
#[tool_enum(output)]
pub enum Template {
    /// R from `in` to `out`, C from `out` to ground: a first-order low-pass,
    /// f_c = 1/(2πRC).
    RcLowpass,
    /// L and C in series from `in` to `out`, R from `out` to ground: a
    /// band-pass across R, resonant at f_0 = 1/(2π√(LC)).
    SeriesRlc,
    /// R from `in` to `out`, a silicon diode from `out` to ground: clips the
    /// positive swing near 0.7 V.
    DiodeClipper,
}

/// A template and its components: the argument group every analysis
/// takes (the source's amplitude is each analysis's own).
#[derive(Debug, Clone, Copy, PartialEq, HardenedArgs)]
pub struct Components {
    /// The circuit.
    pub template: Template,
    /// R
    #[bounded(min = 1e-3, max = 1e9, units = "ohm")]
    pub resistance: f64,
    /// C (unused by the clipper)
    #[bounded(min = 1e-15, max = 1.0, units = "F", default = 1e-6)]
    pub capacitance: f64,
    /// L (series RLC only)
    #[bounded(min = 1e-12, max = 1e3, units = "H", default = 1e-3)]
    pub inductance: f64,
}

impl Components {
    /// The circuit of these components, the source at `amplitude` volts,
    /// under `analysis`.
    pub fn circuit(self, amplitude: f64, analysis: Analysis) -> Circuit {
        let parts = Parts {
            resistance: self.resistance,
            capacitance: self.capacitance,
            inductance: self.inductance,
            amplitude,
        };
        Circuit {
            template: self.template,
            parts,
            analysis,
        }
    }
}

/// Component values, validated by the tool's bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parts {
    /// R, in Ω.
    pub resistance: f64,
    /// C, in F (unused by the clipper).
    pub capacitance: f64,
    /// L, in H (used by the series RLC only).
    pub inductance: f64,
    /// Source amplitude, in V.
    pub amplitude: f64,
}

/// What to simulate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Analysis {
    /// Small-signal frequency sweep, `points_per_decade` points per decade.
    Ac {
        /// First frequency, Hz.
        f_start: f64,
        /// Last frequency, Hz.
        f_stop: f64,
        /// Points per decade.
        points_per_decade: u32,
    },
    /// Transient: a step (RC, RLC) or two periods of a sine (clipper).
    Tran {
        /// Output step, s.
        t_step: f64,
        /// End time, s.
        t_stop: f64,
    },
    /// DC operating point with the source at `amplitude`.
    Op,
}

/// A template, its parts and an analysis: everything a netlist is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Circuit {
    /// The template.
    pub template: Template,
    /// Its component values.
    pub parts: Parts,
    /// The analysis.
    pub analysis: Analysis,
}

/// Output points of an AC sweep (the cost estimate of `spice_ac`; integer
/// arguments are `f64` inside a cost expression).
pub fn ac_points(f_start: f64, f_stop: f64, points_per_decade: f64) -> f64 {
    (f_stop / f_start).log10().max(0.0) * points_per_decade + 1.0
}

/// Output points of a transient (the cost estimate of `spice_tran`).
pub fn tran_points(t_step: f64, t_stop: f64) -> f64 {
    t_stop / t_step + 1.0
}

impl Circuit {
    /// The netlist: options, the source, the template's elements, the
    /// analysis. Built by the deck writer from numbers and fixed words.
    pub fn deck(&self) -> Result<Deck<Spice>, DeckError> {
        let p = self.parts;
        let mut deck = Deck::<Spice>::new();
        let ascii = DeckValue::named("filetype", "ascii")?;
        match self.analysis {
            // Output on the t_step grid, not ngspice's internal time points.
            Analysis::Tran { .. } => deck.line(".options", (ascii, "interp"))?,
            _ => deck.line(".options", (ascii,))?,
        };
        match self.analysis {
            Analysis::Ac { .. } => deck.line("V1", ("in", "0", "dc", 0.0, "ac", p.amplitude))?,
            // Two periods of a sine over the run.
            Analysis::Tran { t_stop, .. } if self.template == Template::DiodeClipper => {
                deck.line("V1", ("in", "0", "sin", 0.0, p.amplitude, 2.0 / t_stop))?
            }
            // A step at t = 0 rising within one output step, held past the
            // end of the run.
            Analysis::Tran { t_step, t_stop } => deck.line(
                "V1",
                (
                    "in",
                    "0",
                    "pulse",
                    0.0,
                    p.amplitude,
                    0.0,
                    t_step / 10.0,
                    t_step / 10.0,
                    t_stop * 10.0,
                    t_stop * 20.0,
                ),
            )?,
            Analysis::Op => deck.line("V1", ("in", "0", "dc", p.amplitude))?,
        };
        match self.template {
            Template::RcLowpass => deck
                .line("R1", ("in", "out", p.resistance))?
                .line("C1", ("out", "0", p.capacitance))?,
            Template::SeriesRlc => deck
                .line("L1", ("in", "mid", p.inductance))?
                .line("C1", ("mid", "out", p.capacitance))?
                .line("R1", ("out", "0", p.resistance))?,
            Template::DiodeClipper => deck
                .line("R1", ("in", "out", p.resistance))?
                .line("D1", ("out", "0", "dclip"))?
                .line(
                    ".model",
                    (
                        "dclip",
                        "d",
                        DeckValue::named("is", DIODE_IS)?,
                        DeckValue::named("n", DIODE_N)?,
                    ),
                )?,
        };
        match self.analysis {
            Analysis::Ac {
                f_start,
                f_stop,
                points_per_decade,
            } => deck.line(".ac", ("dec", points_per_decade, f_start, f_stop))?,
            Analysis::Tran { t_step, t_stop } => deck.line(".tran", (t_step, t_stop))?,
            Analysis::Op => deck.line(".op", ())?,
        };
        Ok(deck)
    }
}

/// One point of an AC sweep.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AcPoint {
    /// Frequency, Hz.
    pub frequency: f64,
    /// |v(out)/v(in)| in dB.
    pub gain_db: f64,
    /// Phase of v(out)/v(in), degrees.
    pub phase_deg: f64,
}

/// Figures of an AC sweep.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AcFigures {
    /// Frequency of the largest gain, Hz (the resonance of a band-pass).
    pub peak_frequency: f64,
    /// The largest gain, dB.
    pub peak_gain_db: f64,
    /// Where the gain falls 3.01 dB below the peak below it, Hz (none if it
    /// does not within the sweep).
    pub f_3db_low: Option<f64>,
    /// Where the gain falls 3.01 dB below the peak above it, Hz (the cutoff
    /// of a low-pass).
    pub f_3db_high: Option<f64>,
}

/// One point of a transient.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TranPoint {
    /// Time, s.
    pub time: f64,
    /// Source voltage v(in), V.
    pub v_in: f64,
    /// Output voltage v(out), V.
    pub v_out: f64,
}

/// Figures of a transient.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TranFigures {
    /// v(out) at the end, V.
    pub final_value: f64,
    /// Largest v(out), V.
    pub max_value: f64,
    /// 10 % to 90 % rise time of v(out) from its start to its final value,
    /// s (none if it does not cross both levels).
    pub rise_time: Option<f64>,
    /// Overshoot above the final value, as a fraction of the step (none
    /// when there is no step).
    pub overshoot: Option<f64>,
}

/// Why a plot could not be turned into figures (a fixed text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the simulator's result lacks the expected vectors")]
pub struct MissingVectors;

/// −3 dB below the peak: 20·log10(√2).
const DB3: f64 = 3.010_299_956_639_812;

/// The AC points and figures of `plot` (v(out) over v(in)).
pub fn ac(plot: &Plot) -> Result<(Vec<AcPoint>, AcFigures), MissingVectors> {
    let f = plot.scale();
    let vin = plot.vector("v(in)").ok_or(MissingVectors)?;
    let vout = plot.vector("v(out)").ok_or(MissingVectors)?;
    if f.is_empty() || vin.len() != f.len() || vout.len() != f.len() {
        return Err(MissingVectors);
    }
    let points: Vec<AcPoint> = f
        .iter()
        .zip(vin.iter().zip(vout))
        .map(|(&frequency, (&(ir, ii), &(or, oi)))| {
            // out / in as a complex quotient.
            let d = ir * ir + ii * ii;
            let (hr, hi) = if d > 0.0 {
                ((or * ir + oi * ii) / d, (oi * ir - or * ii) / d)
            } else {
                (0.0, 0.0)
            };
            let mag = hr.hypot(hi);
            AcPoint {
                frequency,
                gain_db: if mag > 0.0 {
                    20.0 * mag.log10()
                } else {
                    -400.0
                },
                phase_deg: hi.atan2(hr).to_degrees(),
            }
        })
        .collect();
    let (peak, top) = points
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bi, bg), (i, p)| {
            if p.gain_db > bg {
                (i, p.gain_db)
            } else {
                (bi, bg)
            }
        });
    let level = top - DB3;
    let crossing = |a: &AcPoint, b: &AcPoint| {
        // Interpolate in log-frequency between two points around `level`.
        let t = (level - a.gain_db) / (b.gain_db - a.gain_db);
        let (la, lb) = (a.frequency.log10(), b.frequency.log10());
        10f64.powf(la + t * (lb - la))
    };
    let f_3db_high = (peak + 1..points.len())
        .find(|&i| points[i].gain_db < level)
        .map(|i| crossing(&points[i - 1], &points[i]));
    let f_3db_low = (1..=peak)
        .rev()
        .find(|&i| points[i - 1].gain_db < level)
        .map(|i| crossing(&points[i - 1], &points[i]));
    let figures = AcFigures {
        peak_frequency: points[peak].frequency,
        peak_gain_db: top,
        f_3db_low,
        f_3db_high,
    };
    Ok((points, figures))
}

/// The transient points and figures of `plot`.
pub fn tran(plot: &Plot) -> Result<(Vec<TranPoint>, TranFigures), MissingVectors> {
    let t = plot.scale();
    let vin = plot.vector("v(in)").ok_or(MissingVectors)?;
    let vout = plot.vector("v(out)").ok_or(MissingVectors)?;
    if t.is_empty() || vin.len() != t.len() || vout.len() != t.len() {
        return Err(MissingVectors);
    }
    let points: Vec<TranPoint> = t
        .iter()
        .zip(vin.iter().zip(vout))
        .map(|(&time, (&(v_in, _), &(v_out, _)))| TranPoint { time, v_in, v_out })
        .collect();
    let start = points[0].v_out;
    let final_value = points[points.len() - 1].v_out;
    let max_value = points
        .iter()
        .map(|p| p.v_out)
        .fold(f64::NEG_INFINITY, f64::max);
    let step = final_value - start;
    let cross = |fraction: f64| {
        let level = start + fraction * step;
        points.windows(2).find_map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let crosses = (a.v_out - level) * (b.v_out - level) <= 0.0 && a.v_out != b.v_out;
            crosses.then(|| a.time + (level - a.v_out) / (b.v_out - a.v_out) * (b.time - a.time))
        })
    };
    let has_step = step.abs() > 1e-12;
    let rise_time = match (has_step, cross(0.1), cross(0.9)) {
        (true, Some(t10), Some(t90)) if t90 >= t10 => Some(t90 - t10),
        _ => None,
    };
    let overshoot = has_step.then(|| ((max_value - final_value) / step).max(0.0));
    Ok((
        points,
        TranFigures {
            final_value,
            max_value,
            rise_time,
            overshoot,
        },
    ))
}

/// The operating point: v(in), v(out) and the source current i(v1).
pub fn op(plot: &Plot) -> Result<(f64, f64, f64), MissingVectors> {
    let get = |name: &str| {
        plot.vector(name)
            .and_then(|v| v.first())
            .map(|p| p.0)
            .ok_or(MissingVectors)
    };
    Ok((get("v(in)")?, get("v(out)")?, get("i(v1)")?))
}

/// The clipper's exact operating point: v solving (V − v)/R = Is·(e^{v/(n·Vt)} − 1),
/// by bisection (the left side falls, the right side rises in v).
pub fn clipper_op(amplitude: f64, resistance: f64) -> f64 {
    let f = |v: f64| {
        (amplitude - v) / resistance - DIODE_IS * ((v / (DIODE_N * THERMAL_VOLTAGE)).exp() - 1.0)
    };
    let (mut lo, mut hi) = (amplitude.min(0.0) - 1.0, amplitude.max(0.0) + 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> Parts {
        Parts {
            resistance: 1e3,
            capacitance: 1e-6,
            inductance: 1e-3,
            amplitude: 1.0,
        }
    }

    #[test]
    fn netlists_hold_exactly_the_validated_values() {
        let c = Circuit {
            template: Template::SeriesRlc,
            parts: parts(),
            analysis: Analysis::Ac {
                f_start: 10.0,
                f_stop: 1e6,
                points_per_decade: 20,
            },
        };
        let text = String::from_utf8(c.deck().unwrap().render().unwrap()).unwrap();
        assert_eq!(
            text,
            "hardened-mcp generated netlist\n.options filetype=ascii\nV1 in 0 dc 0.0 ac 1.0\n\
             L1 in mid 0.001\nC1 mid out 1e-6\nR1 out 0 1000.0\n.ac dec 20 10.0 1000000.0\n.end\n"
        );
    }

    #[test]
    fn the_clipper_solution_satisfies_its_equation() {
        let v = clipper_op(5.0, 1e3);
        assert!(v > 0.55 && v < 0.75, "{v}");
        let lhs = (5.0 - v) / 1e3;
        let rhs = DIODE_IS * ((v / THERMAL_VOLTAGE).exp() - 1.0);
        assert!((lhs - rhs).abs() < 1e-9 * lhs, "{lhs} vs {rhs}");
        // Reverse bias: the diode blocks, the output follows the source.
        assert!((clipper_op(-2.0, 1e3) + 2.0).abs() < 1e-6);
    }

    #[test]
    fn cost_estimates_count_output_points() {
        assert!((ac_points(10.0, 1e6, 20.0) - 101.0).abs() < 1e-9);
        assert!((tran_points(1e-6, 1e-3) - 1001.0).abs() < 1e-6);
    }
}
