//! A bounded reader of ngspice's ASCII raw files (`-r FILE` with
//! `filetype=ascii`). The file is written by the solver, so it is untrusted:
//! every size is bounded before anything is allocated for it, every number
//! read must be finite (the scale's imaginary part, which ngspice never
//! sets, is not read), and any deviation from the format is one of a few
//! fixed errors, never a panic.
//!
//! ```text
//! Title: …
//! Date: …
//! Plotname: AC Analysis
//! Flags: complex
//! No. Variables: 3
//! No. Points: 41
//! Variables:
//!   0  frequency  frequency  grid=3
//!   1  v(in)  voltage
//!   2  v(out)  voltage
//! Values:
//! 0    1.0e+01,0.0e+00
//!   1.0e+00,0.0e+00
//!   9.9e-01,-6.2e-02
//! …
//! ```
//!
//! (fields are separated by tabs in the file). Only the first plot of a
//! file is read.

/// Largest raw file read, in bytes.
pub const MAX_RAW_BYTES: usize = 32 << 20;
/// Most variables (the scale and the vectors) of a plot.
pub const MAX_VARIABLES: usize = 64;
/// Most points of a plot.
pub const MAX_POINTS: usize = 1_000_000;
/// Most values (variables × points) of a plot.
pub const MAX_VALUES: usize = 4_000_000;
/// Longest variable or plot name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// Why a raw file was refused. The texts are fixed: nothing of the file
/// appears in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RawError {
    /// The file ends before the values it announces.
    #[error("the simulator's result file is truncated")]
    Truncated,
    /// A line does not follow the raw format.
    #[error("the simulator's result file is malformed")]
    Malformed,
    /// The file announces more variables, points or values than allowed.
    #[error("the simulator's result file is larger than allowed")]
    TooLarge,
    /// A value is not a finite number.
    #[error("the simulator's result file holds a non-finite value")]
    NonFinite,
}

/// One plot of a raw file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Plot {
    /// The analysis, as ngspice names it (`AC Analysis`, `Transient
    /// Analysis`, `Operating Point`); printable ASCII only.
    pub name: String,
    /// Whether the values are complex.
    pub complex: bool,
    /// The variables: the scale first (`frequency`, `time`), then the
    /// vectors (`v(out)`, `i(v1)`); names are lowercase printable ASCII.
    pub variables: Vec<String>,
    /// `values[variable][point]` as (real, imaginary); the imaginary part is
    /// 0 for real plots.
    pub values: Vec<Vec<(f64, f64)>>,
}

impl Plot {
    /// The values of the variable `name`, if the plot has it.
    pub fn vector(&self, name: &str) -> Option<&[(f64, f64)]> {
        let i = self.variables.iter().position(|v| v == name)?;
        self.values.get(i).map(Vec::as_slice)
    }

    /// The real parts of the scale (variable 0).
    pub fn scale(&self) -> Vec<f64> {
        self.values
            .first()
            .map(|v| v.iter().map(|p| p.0).collect())
            .unwrap_or_default()
    }

    /// The number of points.
    pub fn points(&self) -> usize {
        self.values.first().map_or(0, Vec::len)
    }
}

/// Parses the first plot of an ASCII raw file.
pub fn parse(bytes: &[u8]) -> Result<Plot, RawError> {
    if bytes.len() > MAX_RAW_BYTES {
        return Err(RawError::TooLarge);
    }
    // ngspice ends the file with a line break: a file cut anywhere,
    // even inside the last number, lacks it.
    if !bytes.ends_with(b"\n") {
        return Err(RawError::Truncated);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| RawError::Malformed)?;
    let mut lines = text.lines();
    let mut name = None;
    let mut complex = None;
    let mut n_vars = None;
    let mut n_points = None;
    // Header, up to `Variables:`.
    loop {
        let line = lines.next().ok_or(RawError::Truncated)?;
        let (key, value) = line.split_once(':').ok_or(RawError::Malformed)?;
        let value = value.trim();
        match key {
            "Title" | "Date" | "Command" | "Option" => {}
            "Plotname" => name = Some(checked_name(value)?),
            "Flags" => {
                complex = Some(match value.split_whitespace().next() {
                    Some("complex") => true,
                    Some("real") => false,
                    _ => return Err(RawError::Malformed),
                })
            }
            "No. Variables" => n_vars = Some(count(value, MAX_VARIABLES)?),
            "No. Points" => n_points = Some(count(value, MAX_POINTS)?),
            "Variables" if value.is_empty() => break,
            _ => return Err(RawError::Malformed),
        }
    }
    let (Some(name), Some(complex), Some(n_vars), Some(n_points)) =
        (name, complex, n_vars, n_points)
    else {
        return Err(RawError::Malformed);
    };
    if n_vars == 0 || n_vars.checked_mul(n_points).is_none_or(|n| n > MAX_VALUES) {
        return Err(RawError::TooLarge);
    }
    let mut variables = Vec::with_capacity(n_vars);
    for i in 0..n_vars {
        let line = lines.next().ok_or(RawError::Truncated)?;
        let mut fields = line.split_whitespace();
        if fields.next() != Some(i.to_string().as_str()) {
            return Err(RawError::Malformed);
        }
        let var = fields.next().ok_or(RawError::Malformed)?;
        variables.push(checked_name(var)?.to_ascii_lowercase());
    }
    if lines.next().map(str::trim) != Some("Values:") {
        return Err(RawError::Malformed);
    }
    // Values: the point index, then one value per variable, one per line
    // (the first on the index's line).
    let mut values = vec![Vec::with_capacity(n_points); n_vars];
    let mut tokens = lines.flat_map(str::split_whitespace);
    for p in 0..n_points {
        let index = tokens.next().ok_or(RawError::Truncated)?;
        if index != p.to_string() {
            return Err(RawError::Malformed);
        }
        for (i, column) in values.iter_mut().enumerate() {
            let token = tokens.next().ok_or(RawError::Truncated)?;
            column.push(if i == 0 {
                scale_value(token, complex)?
            } else {
                value(token, complex)?
            });
        }
    }
    Ok(Plot {
        name: name.to_owned(),
        complex,
        variables,
        values,
    })
}

fn count(value: &str, max: usize) -> Result<usize, RawError> {
    let n: usize = value.trim().parse().map_err(|_| RawError::Malformed)?;
    if n > max {
        return Err(RawError::TooLarge);
    }
    Ok(n)
}

fn checked_name(s: &str) -> Result<&str, RawError> {
    if s.is_empty() || s.len() > MAX_NAME_LEN || !s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(RawError::Malformed);
    }
    Ok(s)
}

fn number(s: &str) -> Result<f64, RawError> {
    let v: f64 = s.parse().map_err(|_| RawError::Malformed)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(RawError::NonFinite)
    }
}

/// A point of the scale (variable 0: `frequency`, `time`), which is real.
/// In a complex plot ngspice writes it as complex too, with an imaginary
/// part it never sets: whatever its memory held, now and then a NaN. That
/// part must still be a number; it is read as 0.
fn scale_value(token: &str, complex: bool) -> Result<(f64, f64), RawError> {
    if complex {
        let (re, im) = token.split_once(',').ok_or(RawError::Malformed)?;
        im.parse::<f64>().map_err(|_| RawError::Malformed)?;
        Ok((number(re)?, 0.0))
    } else {
        value(token, complex)
    }
}

fn value(token: &str, complex: bool) -> Result<(f64, f64), RawError> {
    if complex {
        let (re, im) = token.split_once(',').ok_or(RawError::Malformed)?;
        Ok((number(re)?, number(im)?))
    } else {
        Ok((number(token)?, 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AC: &str = "Title: rc\nDate: today\nPlotname: AC Analysis\nFlags: complex\n\
No. Variables: 2\nNo. Points: 2       \nVariables:\n\t0\tfrequency\tfrequency\tgrid=3\n\
\t1\tv(OUT)\tvoltage\nValues:\n0\t\t1.0e+01,-2.9e+07\n\t1.0e+00,0.0e+00\n\
1\t\t1.0e+02,-2.9e+07\n\t5.0e-01,-5.0e-01\n";

    #[test]
    fn reads_a_complex_plot() {
        let p = parse(AC.as_bytes()).unwrap();
        assert_eq!(p.name, "AC Analysis");
        assert!(p.complex);
        assert_eq!(p.variables, ["frequency", "v(out)"]);
        assert_eq!(p.scale(), [10.0, 100.0]);
        assert_eq!(p.vector("v(out)").unwrap(), [(1.0, 0.0), (0.5, -0.5)]);
        assert_eq!(p.points(), 2);
        assert_eq!(p.vector("frequency").unwrap(), [(10.0, 0.0), (100.0, 0.0)]);
    }

    #[test]
    fn the_scales_imaginary_part_is_not_read() {
        // As ngspice-39 writes it now and then: the frequency's unset
        // imaginary part is a NaN.
        for garbage in ["nan", "-nan", "NaN", "inf", "1e999"] {
            let text = AC.replace("1.0e+01,-2.9e+07", &format!("1.0e+01,{garbage}"));
            let p = parse(text.as_bytes()).unwrap();
            assert_eq!(p.scale(), [10.0, 100.0], "{garbage}");
            assert_eq!(p.vector("frequency").unwrap()[0], (10.0, 0.0));
        }
        // Still a number, and the real part still finite.
        let cases = [
            ("1.0e+01,-2.9e+07", "1.0e+01,x", RawError::Malformed),
            ("1.0e+01,-2.9e+07", "1.0e+01", RawError::Malformed),
            ("1.0e+01,-2.9e+07", "nan,0", RawError::NonFinite),
        ];
        for (from, to, want) in cases {
            let text = AC.replace(from, to);
            assert_eq!(parse(text.as_bytes()), Err(want), "{to}");
        }
        // A vector's NaN is still refused.
        let text = AC.replace("1.0e+00,0.0e+00", "1.0e+00,nan");
        assert_eq!(parse(text.as_bytes()), Err(RawError::NonFinite));
    }

    #[test]
    fn every_truncation_is_a_fixed_error_never_a_panic() {
        for cut in 0..AC.len() {
            let r = parse(&AC.as_bytes()[..cut]);
            assert!(r.is_err(), "accepted a file cut at {cut}");
        }
    }

    #[test]
    fn hostile_files_are_refused() {
        let cases: [(&str, RawError); 6] = [
            (
                &AC.replace("No. Points: 2", "No. Points: 99999999999"),
                RawError::TooLarge,
            ),
            (
                &AC.replace("No. Variables: 2", "No. Variables: 65"),
                RawError::TooLarge,
            ),
            (
                &AC.replace("5.0e-01,-5.0e-01", "NaN,0"),
                RawError::NonFinite,
            ),
            (
                &AC.replace("5.0e-01,-5.0e-01", "1e999,0"),
                RawError::NonFinite,
            ),
            (
                &AC.replace("Flags: complex", "Flags: quaternion"),
                RawError::Malformed,
            ),
            (&AC.replace("\n1\t\t", "\n7\t\t"), RawError::Malformed),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text.as_bytes()), Err(want));
        }
        assert_eq!(parse(&[0xff, 0xfe, b'\n']), Err(RawError::Malformed));
        let huge = vec![b'\n'; MAX_RAW_BYTES + 1];
        assert_eq!(parse(&huge), Err(RawError::TooLarge));
        let injected = AC.replace("v(OUT)", "v(o\u{7}ut)");
        assert_eq!(parse(injected.as_bytes()), Err(RawError::Malformed));
    }
}
