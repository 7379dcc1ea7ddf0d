//! SVG line charts of values over frames, with labelled frame markers (plotters' SVG backend).
//!
//! Presentation only: the values are `f64` read from finished simulations, nothing here feeds
//! back into one. Text is written as SVG `<text>` elements and laid out by plotters' built-in
//! estimate, so no font files or system libraries are needed.
//!
//! ```ignore
//! let health = Series { label: "P0 Health".into(), points: vec![(0, 150.0), (60, 120.0)] };
//! let ko = Marker { frame: 60, label: "KO".into() };
//! write_svg(Path::new("duel.svg"), "Health over frames", &[health], &[ko])?;
//! ```

use plotters::prelude::*;
use std::path::Path;

/// One line of the chart: a label for the legend and `(frame, value)` points in frame order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The legend entry.
    pub label: String,
    /// `(frame, value)` points, in increasing frame order.
    pub points: Vec<(u32, f64)>,
}

/// A vertical line at a frame with a short label (an event worth seeing on the chart).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marker {
    /// The frame.
    pub frame: u32,
    /// The label drawn at the top of the line.
    pub label: String,
}

/// The chart size in pixels.
const SIZE: (u32, u32) = (1280, 640);
/// The width of the legend panel on the right, in pixels.
const LEGEND_WIDTH: u32 = 170;

/// Writes an SVG line chart of `series` over frames to `path`, with `markers` as labelled
/// vertical lines. Non-finite values are skipped. Errors (an unwritable path, a drawing
/// failure) are returned as a message that names the path.
pub fn write_svg(
    path: &Path,
    title: &str,
    series: &[Series],
    markers: &[Marker],
) -> Result<(), String> {
    let fail =
        |e: &dyn std::fmt::Display| format!("cannot write the chart {}: {e}", path.display());
    let finite = |v: &f64| v.is_finite();
    let last_frame = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(markers.iter().map(|m| m.frame))
        .max()
        .unwrap_or(0)
        .max(1);
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(finite);
    let (lo, hi) =
        values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(1.0);
    // Room above the data for marker labels.
    let (y0, y1) = (lo - pad, hi + pad * 4.0);

    let decimals = if hi - lo >= 20.0 { 0 } else { 2 };
    let y_label = move |v: &f64| format!("{v:.decimals$}");

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    // The chart on the left, the legend in a panel on the right (never over the data).
    let legend_width = if series.is_empty() { 0 } else { LEGEND_WIDTH };
    let (plot_area, legend_area) = root.split_horizontally(SIZE.0 - legend_width);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..last_frame, y0..y1)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("value")
        .y_label_formatter(&y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| fail(&e))?;

    let marker_style = ShapeStyle::from(&BLACK.mix(0.35)).stroke_width(1);
    for (k, m) in markers.iter().enumerate() {
        chart
            .draw_series(DashedLineSeries::new(
                [(m.frame, y0), (m.frame, hi + pad)],
                4,
                4,
                marker_style,
            ))
            .map_err(|e| fail(&e))?;
        // Staggered labels so neighbours overlap less.
        let y = hi + pad * (1.6 + (k % 3) as f64 * 0.8);
        let text = Text::new(m.label.clone(), (m.frame, y), ("sans-serif", 12).into_font());
        chart.draw_series(std::iter::once(text)).map_err(|e| fail(&e))?;
    }

    for (i, s) in series.iter().enumerate() {
        let style = ShapeStyle::from(&Palette99::pick(i).to_rgba()).stroke_width(2);
        let points = s.points.iter().copied().filter(|p| p.1.is_finite());
        chart.draw_series(LineSeries::new(points, style)).map_err(|e| fail(&e))?;
        // The legend entry: a line sample and the label.
        let y = 60 + 20 * i as i32;
        legend_area.draw(&PathElement::new([(8, y), (32, y)], style)).map_err(|e| fail(&e))?;
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        legend_area.draw(&Text::new(s.label.clone(), (40, y - 7), font)).map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
