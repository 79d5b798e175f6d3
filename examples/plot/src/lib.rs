//! The examples' plots: line plots with labelled axes, ticks and numbers, a
//! title, a legend, point markers and a caption, drawn with
//! [plotters](https://docs.rs/plotters) into a fixed-size bitmap and encoded
//! as PNG.
//!
//! Bounded by construction:
//!
//! - The image is always [`WIDTH`] × [`HEIGHT`] pixels; a figure holds at
//!   most [`MAX_SERIES`] series and [`MAX_MARKERS`] markers, and a series is
//!   thinned to at most [`MAX_DRAWN_POINTS`] points before drawing (keeping
//!   each pixel column's first, lowest, highest and last value, so the
//!   drawn curve looks the same).
//! - **All text is server-authored**: every string on the image is a
//!   [`Text`], built only from `&'static str` pieces and numbers the
//!   server formats. No caller string, file name or solver output can be
//!   drawn, whatever a tool passes.
//! - The font (DejaVu Sans) is compiled in (the `dejavu` crate) and drawn
//!   by `ab_glyph`: no system font configuration, the same pixels on every
//!   machine.

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// Image width in pixels.
pub const WIDTH: u32 = 800;
/// Image height in pixels.
pub const HEIGHT: u32 = 500;
/// Most series in one figure.
pub const MAX_SERIES: usize = 16;
/// Most markers in one figure.
pub const MAX_MARKERS: usize = 8;
/// Most points drawn per series (four per pixel column).
pub const MAX_DRAWN_POINTS: usize = 4 * WIDTH as usize;

/// The font family name the figures use (registered from the compiled-in
/// DejaVu Sans).
const FAMILY: &str = "sans-serif";
/// Height of the caption strip under the chart.
const CAPTION_HEIGHT: u32 = 34;

/// Text drawn on a figure: only fixed strings and numbers formatted here.
///
/// ```
/// use example_plot::Text;
/// let t = Text::new("cells = ").int(200).lit(", t = ").num(0.05).lit(" s");
/// assert_eq!(t.as_str(), "cells = 200, t = 0.05 s");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    /// A fixed string.
    pub fn new(s: &'static str) -> Self {
        Self(s.to_owned())
    }

    /// Appends a fixed string.
    #[must_use]
    pub fn lit(mut self, s: &'static str) -> Self {
        self.0.push_str(s);
        self
    }

    /// Appends a number, with four significant digits (see [`format_number`]).
    #[must_use]
    pub fn num(mut self, v: f64) -> Self {
        self.0.push_str(&format_number(v));
        self
    }

    /// Appends an integer.
    #[must_use]
    pub fn int(mut self, v: u64) -> Self {
        let _ = write!(self.0, "{v}");
        self
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How an axis maps values to pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Decades evenly spaced (values must be positive; others are skipped).
    Log10,
}

/// An axis: its label (name and unit) and scale.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The label, e.g. `x [m]`.
    pub label: Text,
    /// The scale.
    pub scale: Scale,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: Text) -> Self {
        Self {
            label,
            scale: Scale::Linear,
        }
    }

    /// A logarithmic axis.
    pub fn log10(label: Text) -> Self {
        Self {
            label,
            scale: Scale::Log10,
        }
    }
}

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    /// A solid line.
    Solid,
    /// A dashed line (a reference such as an exact solution).
    Dashed,
}

/// A series: named (in the legend), its points (`x` ascending), colour and
/// stroke. Non-finite points are skipped.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// The legend entry.
    pub name: Text,
    /// The x values.
    pub x: &'a [f64],
    /// The y values (as many as `x`).
    pub y: &'a [f64],
    /// The colour, RGB.
    pub rgb: [u8; 3],
    /// The stroke.
    pub stroke: Stroke,
}

/// A marked point with a label (e.g. the −3 dB point).
#[derive(Debug, Clone)]
pub struct Marker {
    /// Where, in data coordinates.
    pub at: (f64, f64),
    /// Its label, drawn next to it.
    pub label: Text,
}

/// A complete figure.
#[derive(Debug, Clone)]
pub struct Figure<'a> {
    /// The title, above the chart.
    pub title: Text,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The series, drawn in order, all in the legend.
    pub series: Vec<Series<'a>>,
    /// Marked points.
    pub markers: Vec<Marker>,
    /// A line under the chart (e.g. the error against an exact solution).
    pub caption: Option<Text>,
}

/// Why a figure could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No series holds a finite point (on a log axis: a positive one).
    #[error("nothing to plot")]
    NothingToPlot,
    /// More series or markers than the ceilings allow, or a series whose
    /// `x` and `y` differ in length.
    #[error("figure over its ceilings or inconsistent")]
    Invalid,
    /// The compiled-in font could not be loaded.
    #[error("plot font unusable")]
    Font,
    /// Drawing failed (plotters' error, for the server log).
    #[error("drawing failed: {0}")]
    Draw(String),
    /// PNG encoding failed.
    #[error("PNG encoding failed: {0}")]
    Encode(String),
}

/// Draws `figure` and encodes it as an RGB PNG of [`WIDTH`] × [`HEIGHT`].
pub fn render(figure: &Figure<'_>) -> Result<Vec<u8>, PlotError> {
    if figure.series.len() > MAX_SERIES
        || figure.markers.len() > MAX_MARKERS
        || figure.series.iter().any(|s| s.x.len() != s.y.len())
    {
        return Err(PlotError::Invalid);
    }
    fonts()?;
    let log_x = figure.x.scale == Scale::Log10;
    let log_y = figure.y.scale == Scale::Log10;
    let series: Vec<Vec<(f64, f64)>> = figure
        .series
        .iter()
        .map(|s| thin(&drawable(s.x, s.y, log_x, log_y)))
        .collect();
    let (xs, ys) =
        extent(series.iter().flatten().copied(), log_x, log_y).ok_or(PlotError::NothingToPlot)?;
    let (w, h) = (WIDTH as usize, HEIGHT as usize);
    let mut rgb = vec![255u8; w * h * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let (chart_area, caption_area) = root.split_vertically(HEIGHT - CAPTION_HEIGHT);
        match (log_x, log_y) {
            (false, false) => chart(&chart_area, figure, &series, xs, ys)?,
            (true, false) => chart(&chart_area, figure, &series, xs.log_scale(), ys)?,
            (false, true) => chart(&chart_area, figure, &series, xs, ys.log_scale())?,
            (true, true) => chart(&chart_area, figure, &series, xs.log_scale(), ys.log_scale())?,
        }
        if let Some(caption) = &figure.caption {
            caption_area
                .draw(&plotters::element::Text::new(
                    caption.as_str(),
                    (72, 6),
                    (FAMILY, 15).into_font().color(&BLACK),
                ))
                .map_err(draw_error)?;
        }
        root.present().map_err(draw_error)?;
    }
    encode(&rgb)
}

/// The chart: mesh with ticks and numbers, axis labels, series, legend,
/// markers.
fn chart<X, Y>(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    figure: &Figure<'_>,
    series: &[Vec<(f64, f64)>],
    x: X,
    y: Y,
) -> Result<(), PlotError>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(figure.title.as_str(), (FAMILY, 20).into_font())
        .margin(16)
        .x_label_area_size(46)
        .y_label_area_size(76)
        .build_cartesian_2d(x, y)
        .map_err(draw_error)?;
    let (x_scale, y_scale) = (figure.x.scale, figure.y.scale);
    let x_tick = move |v: &f64| tick_label(*v, x_scale);
    let y_tick = move |v: &f64| tick_label(*v, y_scale);
    chart
        .configure_mesh()
        .x_desc(figure.x.label.as_str())
        .y_desc(figure.y.label.as_str())
        .axis_desc_style((FAMILY, 15))
        .label_style((FAMILY, 13))
        .x_label_formatter(&x_tick)
        .y_label_formatter(&y_tick)
        .x_labels(8)
        .y_labels(8)
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(draw_error)?;
    for (s, points) in figure.series.iter().zip(series) {
        let color = RGBColor(s.rgb[0], s.rgb[1], s.rgb[2]);
        let style = color.stroke_width(2);
        let drawn = match s.stroke {
            Stroke::Solid => chart
                .draw_series(LineSeries::new(points.iter().copied(), style))
                .map_err(draw_error)?,
            Stroke::Dashed => chart
                .draw_series(DashedLineSeries::new(points.iter().copied(), 8, 5, style))
                .map_err(draw_error)?,
        };
        let stroke = s.stroke;
        drawn.label(s.name.as_str()).legend(move |(x, y)| {
            let e: DynElement<'static, BitMapBackend<'_>, (i32, i32)> = match stroke {
                Stroke::Solid => PathElement::new(vec![(x, y), (x + 24, y)], style).into_dyn(),
                Stroke::Dashed => PathElement::new(vec![(x, y), (x + 9, y)], style).into_dyn(),
            };
            e
        });
    }
    if !figure.series.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(120, 120, 120))
            .label_font((FAMILY, 13))
            .draw()
            .map_err(draw_error)?;
    }
    let font = (FAMILY, 13).into_font().color(&BLACK);
    for m in &figure.markers {
        if !(m.at.0.is_finite() && m.at.1.is_finite()) {
            continue;
        }
        let element = EmptyElement::at(m.at)
            + Circle::new((0, 0), 5, BLACK.stroke_width(2))
            + plotters::element::Text::new(m.label.as_str().to_owned(), (11, 9), font.clone());
        chart
            .draw_series(std::iter::once(element))
            .map_err(draw_error)?;
    }
    Ok(())
}

/// The finite points of a series (positive where the axis is
/// logarithmic).
fn drawable(x: &[f64], y: &[f64], log_x: bool, log_y: bool) -> Vec<(f64, f64)> {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| (a, b))
        .filter(|&(a, b)| {
            a.is_finite() && b.is_finite() && (!log_x || a > 0.0) && (!log_y || b > 0.0)
        })
        .collect()
}

/// At most [`MAX_DRAWN_POINTS`] points: a longer series is cut into
/// `WIDTH` runs of consecutive points, each kept as its first, lowest,
/// highest and last point, in order (what one pixel column would show).
fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_DRAWN_POINTS {
        return points.to_vec();
    }
    let columns = WIDTH as usize;
    let mut out = Vec::with_capacity(MAX_DRAWN_POINTS);
    for c in 0..columns {
        let run = &points[c * points.len() / columns..(c + 1) * points.len() / columns];
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            continue;
        };
        let mut lo = (0, first);
        let mut hi = (0, first);
        for (i, p) in run.iter().enumerate() {
            if p.1 < lo.1.1 {
                lo = (i, p);
            }
            if p.1 > hi.1.1 {
                hi = (i, p);
            }
        }
        let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        for p in [first, a.1, b.1, last] {
            if out.last() != Some(p) {
                out.push(*p);
            }
        }
    }
    out
}

/// The ranges the axes show: the data's extent, the y range padded by 5 %
/// (a flat series gets a unit range around its value; a log axis a decade).
fn extent(
    points: impl Iterator<Item = (f64, f64)>,
    log_x: bool,
    log_y: bool,
) -> Option<(Range<f64>, Range<f64>)> {
    let mut b: Option<[f64; 4]> = None;
    for (x, y) in points {
        b = Some(match b {
            None => [x, x, y, y],
            Some([x0, x1, y0, y1]) => [x0.min(x), x1.max(x), y0.min(y), y1.max(y)],
        });
    }
    let [x0, x1, y0, y1] = b?;
    let widen = |lo: f64, hi: f64, log: bool, pad: f64| -> Range<f64> {
        if log {
            if hi / lo < 1.0 + 1e-9 {
                lo / 10f64.sqrt()..hi * 10f64.sqrt()
            } else {
                lo..hi
            }
        } else if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            lo - 1.0..hi + 1.0
        } else {
            let d = (hi - lo) * pad;
            lo - d..hi + d
        }
    };
    Some((widen(x0, x1, log_x, 0.0), widen(y0, y1, log_y, 0.05)))
}

/// Registers the compiled-in font once.
fn fonts() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = REGISTERED.get_or_init(|| {
        register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    if *ok { Ok(()) } else { Err(PlotError::Font) }
}

fn encode(rgb: &[u8]) -> Result<Vec<u8>, PlotError> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let encode_error = |e: png::EncodingError| PlotError::Encode(e.to_string());
    let mut writer = enc.write_header().map_err(encode_error)?;
    writer.write_image_data(rgb).map_err(encode_error)?;
    writer.finish().map_err(encode_error)?;
    Ok(out)
}

fn draw_error<E: std::error::Error + Send + Sync>(
    e: plotters::drawing::DrawingAreaErrorKind<E>,
) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// A tick's label: on a logarithmic axis, a power of ten reads `1e3` (every
/// decade alike); anything else as [`format_number`].
fn tick_label(v: f64, scale: Scale) -> String {
    if scale == Scale::Log10 && v > 0.0 {
        let k = v.log10().round();
        if ((v - 10f64.powf(k)) / v).abs() < 1e-9 {
            return format!("1e{k}");
        }
    }
    format_number(v)
}

/// A number as a label shows it: four significant digits, plain between
/// 10⁻³ and 10⁵ (trailing zeros dropped), otherwise in scientific notation
/// (`1.5e-5`); `0` for zero; `∞`/`NaN` never occur (callers filter them,
/// and a non-finite value prints as `?`).
///
/// ```
/// use example_plot::format_number;
/// assert_eq!(format_number(0.05), "0.05");
/// assert_eq!(format_number(1234.5678), "1235");
/// assert_eq!(format_number(2.5e-6), "2.5e-6");
/// assert_eq!(format_number(-3.0), "-3");
/// assert_eq!(format_number(120000.0), "1.2e5");
/// ```
pub fn format_number(v: f64) -> String {
    if !v.is_finite() {
        return "?".to_owned();
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let a = v.abs();
    if (1e-3..1e5).contains(&a) {
        let digits = (3 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.digits$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        };
        if s == "-0" { "0".to_owned() } else { s }
    } else {
        let s = format!("{v:.3e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let m = if m.contains('.') {
                    m.trim_end_matches('0').trim_end_matches('.')
                } else {
                    m
                };
                format!("{m}e{e}")
            }
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine() -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = (0..=200).map(|i| f64::from(i) / 200.0).collect();
        let y = x.iter().map(|v| (std::f64::consts::PI * v).sin()).collect();
        (x, y)
    }

    fn figure<'a>(x: &'a [f64], y: &'a [f64]) -> Figure<'a> {
        Figure {
            title: Text::new("Heat profile"),
            x: Axis::linear(Text::new("x [m]")),
            y: Axis::linear(Text::new("u")),
            series: vec![Series {
                name: Text::new("numerical"),
                x,
                y,
                rgb: [200, 40, 40],
                stroke: Stroke::Solid,
            }],
            markers: vec![],
            caption: Some(Text::new("L2 error = ").num(1.5e-5)),
        }
    }

    fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    #[test]
    fn renders_a_bounded_png_that_is_not_blank() {
        let (x, y) = sine();
        let png = render(&figure(&x, &y)).unwrap();
        let (w, h, rgb) = decode(&png);
        assert_eq!((w, h), (WIDTH, HEIGHT));
        let red = rgb
            .chunks(3)
            .filter(|p| p[0] > 150 && p[1] < 90 && p[2] < 90)
            .count();
        let dark = rgb.chunks(3).filter(|p| p.iter().all(|&c| c < 80)).count();
        // The curve (red) and the text and axes (dark) are there; most of
        // the image is still background.
        assert!(red > 500, "curve pixels: {red}");
        assert!(dark > 2000, "text and axis pixels: {dark}");
        assert!(dark + red < rgb.len() / 3 / 4);
    }

    #[test]
    fn text_is_drawn_from_the_compiled_in_font() {
        let (x, y) = sine();
        let with = render(&figure(&x, &y)).unwrap();
        let mut f = figure(&x, &y);
        f.caption = None;
        let without = render(&f).unwrap();
        let dark = |png: &[u8]| {
            decode(png)
                .2
                .chunks(3)
                .filter(|p| p.iter().all(|&c| c < 80))
                .count()
        };
        assert!(dark(&with) > dark(&without) + 100);
    }

    #[test]
    fn rendering_is_deterministic() {
        let (x, y) = sine();
        assert_eq!(
            render(&figure(&x, &y)).unwrap(),
            render(&figure(&x, &y)).unwrap()
        );
    }

    #[test]
    fn log_axes_skip_non_positive_values_and_empty_figures_are_refused() {
        let x = [0.0, 10.0, 100.0, 1000.0];
        let y = [0.0, -1.0, -3.0, -20.0];
        let mut f = figure(&x, &y);
        f.x = Axis::log10(Text::new("f [Hz]"));
        assert!(render(&f).is_ok());
        let nan = [f64::NAN];
        assert!(matches!(
            render(&figure(&nan, &nan)),
            Err(PlotError::NothingToPlot)
        ));
        let mut f = figure(&x, &y);
        f.series.clear();
        assert!(matches!(render(&f), Err(PlotError::NothingToPlot)));
        let short = [1.0];
        let mut f = figure(&x, &y);
        f.series[0].y = &short;
        assert!(matches!(render(&f), Err(PlotError::Invalid)));
    }

    #[test]
    fn flat_and_huge_series_still_plot() {
        let x = [0.0, 1.0, 2.0];
        let y = [1.0, 1.0, 1.0];
        assert!(render(&figure(&x, &y)).is_ok());
        let x: Vec<f64> = (0..200_000).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|v| (v / 1000.0).sin()).collect();
        assert!(render(&figure(&x, &y)).is_ok());
    }

    #[test]
    fn thinning_keeps_order_extremes_and_ends() {
        let pts: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (f64::from(i), (f64::from(i) * 0.37).sin()))
            .collect();
        let t = thin(&pts);
        assert!(t.len() <= MAX_DRAWN_POINTS);
        assert_eq!(t.first(), pts.first());
        assert_eq!(t.last(), pts.last());
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
        let max = pts.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let min = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        assert!(t.iter().any(|p| p.1 == max) && t.iter().any(|p| p.1 == min));
    }

    #[test]
    fn decades_read_alike_on_log_axes() {
        assert_eq!(tick_label(1000.0, Scale::Log10), "1e3");
        assert_eq!(tick_label(1e-6, Scale::Log10), "1e-6");
        assert_eq!(tick_label(1.0, Scale::Log10), "1e0");
        assert_eq!(tick_label(2000.0, Scale::Log10), "2000");
        assert_eq!(tick_label(1000.0, Scale::Linear), "1000");
    }

    #[test]
    fn numbers_read_as_labels() {
        for (v, s) in [
            (0.0, "0"),
            (1.0, "1"),
            (0.1, "0.1"),
            (0.001, "0.001"),
            (0.0001, "1e-4"),
            (99999.0, "99999"),
            (123456.0, "1.235e5"),
            (12345.0, "12345"),
            (1.0e-12, "1e-12"),
            (-0.25, "-0.25"),
            (4.56789, "4.568"),
            (f64::NAN, "?"),
        ] {
            assert_eq!(format_number(v), s, "{v}");
        }
    }
}
