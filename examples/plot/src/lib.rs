//! The examples' plots: series of numbers drawn as a small PNG line plot, in
//! server code (no solver output reaches the image except the numbers it
//! plots; no text is drawn at all).

/// Plot width in pixels.
pub const WIDTH: u32 = 640;
/// Plot height in pixels.
pub const HEIGHT: u32 = 360;
const MARGIN: i64 = 24;

/// A series to draw: y values over evenly spaced x, and an RGB colour.
pub struct Series<'a> {
    /// The values, plotted left to right.
    pub y: &'a [f64],
    /// The line colour.
    pub rgb: [u8; 3],
}

/// Draws the series on shared axes and encodes a PNG. Non-finite values
/// are skipped. Returns `None` when there is nothing finite to draw.
pub fn render(series: &[Series<'_>]) -> Option<Vec<u8>> {
    let finite = series
        .iter()
        .flat_map(|s| s.y.iter().copied())
        .filter(|v| v.is_finite());
    let (lo, hi) = finite.fold(None, |acc: Option<(f64, f64)>, v| match acc {
        None => Some((v, v)),
        Some((a, b)) => Some((a.min(v), b.max(v))),
    })?;
    let (lo, hi) = if hi - lo < 1e-12 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let mut canvas = Canvas::new(WIDTH, HEIGHT);
    let (w, h) = (i64::from(WIDTH), i64::from(HEIGHT));
    // Axes, and the zero line when it is in range.
    canvas.line((MARGIN, h - MARGIN), (w - MARGIN, h - MARGIN), [0, 0, 0]);
    canvas.line((MARGIN, MARGIN), (MARGIN, h - MARGIN), [0, 0, 0]);
    let to_px = |i: usize, n: usize, v: f64| -> (i64, i64) {
        let fx = if n > 1 {
            i as f64 / (n - 1) as f64
        } else {
            0.5
        };
        let fy = (v - lo) / (hi - lo);
        let x = MARGIN as f64 + fx * (w - 2 * MARGIN) as f64;
        let y = (h - MARGIN) as f64 - fy * (h - 2 * MARGIN) as f64;
        (x.round() as i64, y.round() as i64)
    };
    if lo < 0.0 && hi > 0.0 {
        let (_, y0) = to_px(0, 2, 0.0);
        canvas.line((MARGIN, y0), (w - MARGIN, y0), [200, 200, 200]);
    }
    for s in series {
        let n = s.y.len();
        let mut prev = None;
        for (i, &v) in s.y.iter().enumerate() {
            if !v.is_finite() {
                prev = None;
                continue;
            }
            let p = to_px(i, n, v);
            if let Some(q) = prev {
                canvas.line(q, p, s.rgb);
            }
            prev = Some(p);
        }
    }
    canvas.encode()
}

struct Canvas {
    w: u32,
    h: u32,
    rgb: Vec<u8>,
}

impl Canvas {
    fn new(w: u32, h: u32) -> Self {
        Self {
            w,
            h,
            rgb: vec![255; (w * h * 3) as usize],
        }
    }

    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if (0..i64::from(self.w)).contains(&x) && (0..i64::from(self.h)).contains(&y) {
            let i = ((y as usize) * self.w as usize + x as usize) * 3;
            self.rgb[i..i + 3].copy_from_slice(&c);
        }
    }

    /// Bresenham, two pixels thick.
    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: [u8; 3]) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.put(x, y, c);
            self.put(x, y + 1, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn encode(&self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.w, self.h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().ok()?;
        writer.write_image_data(&self.rgb).ok()?;
        writer.finish().ok()?;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_png_with_the_expected_header() {
        let y: Vec<f64> = (0..100).map(|i| (i as f64 / 10.0).sin()).collect();
        let png = render(&[Series {
            y: &y,
            rgb: [200, 0, 0],
        }])
        .unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[16..24], &[0, 0, 2, 128, 0, 0, 1, 104]); // 640 x 360
    }

    #[test]
    fn nothing_finite_means_no_plot() {
        assert!(
            render(&[Series {
                y: &[f64::NAN],
                rgb: [0, 0, 0]
            }])
            .is_none()
        );
        assert!(render(&[]).is_none());
    }

    #[test]
    fn a_flat_series_still_plots() {
        assert!(
            render(&[Series {
                y: &[1.0, 1.0, 1.0],
                rgb: [0, 0, 0]
            }])
            .is_some()
        );
    }
}
