//! SVG charts of values over frames: stacked panels sharing the frame axis, one y axis and one
//! legend per panel, and a cue timeline below them (plotters' SVG backend).
//!
//! Presentation only: the values are `f64` read from finished simulations, nothing here feeds
//! back into one. Text is written as SVG `<text>` elements and laid out by plotters' built-in
//! estimate, so no font files or system libraries are needed.
//!
//! The layout keeps every label in a place of its own: panel legends in a column on the right
//! (never over the data), cue kinds as named rows of the timeline (a tick per burst, a bar per
//! active span; one sub-row per entity) with the names in the left margin, and the frame axis
//! labelled once, at the bottom. Each series is one `<polyline>` holding only the points where
//! its value changes (and the frame before), so a step-shaped series costs its steps, not its
//! frames.
//!
//! ```
//! use rollback_abilities_kit::plot::{Chart, Panel, Series};
//!
//! let mut health = Series::new("P0 Health", Some(0));
//! health.push(0, 150.0);
//! health.push(60, 120.0);
//! let mut chart = Chart::new("Health over frames", 61);
//! chart.panels.push(Panel { series: vec![health] });
//! chart.rows = vec!["P0".into()];
//! chart.cues.burst("GameplayCue.KO", 0, 60);
//! let svg = chart.to_svg()?; // or `chart.write_svg(path)`
//! assert!(svg.contains("<polyline") && svg.contains("P0 Health"));
//! # Ok::<(), String>(())
//! ```

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One line of a panel: a legend label and `(frame, value)` points in frame order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The legend entry.
    pub label: String,
    /// The cue timeline row (entity) the series belongs to, if any: series of the same row
    /// share a colour family with that row's cue marks.
    pub row: Option<usize>,
    /// `(frame, value)` points, in increasing frame order. [`Series::push`] keeps only the
    /// first and last frame of each run of equal values.
    pub points: Vec<(u32, f64)>,
}

impl Series {
    /// An empty series.
    pub fn new(label: impl Into<String>, row: Option<usize>) -> Series {
        Series { label: label.into(), row, points: Vec::new() }
    }

    /// Appends the value at `frame` (after the last point's frame). A run of equal values
    /// keeps only its first and last points: the line drawn through the kept points is exactly
    /// the line through all of them. Non-finite values are skipped.
    pub fn push(&mut self, frame: u32, value: f64) {
        if !value.is_finite() {
            return;
        }
        let n = self.points.len();
        if n >= 2 && self.points[n - 1].1 == value && self.points[n - 2].1 == value {
            self.points[n - 1].0 = frame;
        } else {
            self.points.push((frame, value));
        }
    }

    /// The smallest and largest values (`None` when empty).
    fn bounds(&self) -> Option<(f64, f64)> {
        self.points.iter().map(|p| p.1).fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
    }

    /// True when every point has the same value.
    pub fn is_constant(&self) -> bool {
        self.bounds().is_none_or(|(lo, hi)| lo == hi)
    }
}

/// A sub-chart with its own y axis and legend; all panels share the frame axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// The lines, drawn in order and listed in the legend in order.
    pub series: Vec<Series>,
}

/// Groups series into panels of similar scale, so that a 0–1 fraction is not drawn flat
/// beside a 150-point health bar. `key` names what a series measures (an attribute): series
/// with the same key always share a panel. Keys are ordered by the largest magnitude they
/// reach, and a new panel starts when a key reaches more than 10× the smallest magnitude of
/// the current panel. Panels come in the order of their first series; series keep their order.
pub fn panels_by_scale(series: Vec<(String, Series)>) -> Vec<Panel> {
    let magnitude = |s: &Series| s.bounds().map_or(0.0, |(lo, hi)| lo.abs().max(hi.abs()));
    // Each key with its largest magnitude, ordered by it (ties by first appearance).
    let mut keys: Vec<(String, f64)> = Vec::new();
    for (k, s) in &series {
        let m = magnitude(s);
        match keys.iter_mut().find(|(x, _)| x == k) {
            Some((_, km)) => *km = km.max(m),
            None => keys.push((k.clone(), m)),
        }
    }
    keys.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut panel_of: Vec<(String, usize)> = Vec::new();
    let mut panel_floor = f64::NAN;
    let mut panels = 0;
    for (k, m) in keys {
        // Magnitudes below 1e-9 count as 1e-9, so an all-zero series joins the smallest panel.
        let m = m.max(1e-9);
        if panels == 0 || m > panel_floor * 10.0 {
            panels += 1;
            panel_floor = m;
        }
        panel_of.push((k, panels - 1));
    }
    // Panels in the order of their first series (the caller's order: content order, say).
    let mut order: Vec<usize> = Vec::new();
    let mut out = vec![Panel::default(); panels];
    for (k, s) in series {
        let p = panel_of.iter().find(|(x, _)| *x == k).map_or(0, |(_, p)| *p);
        if !order.contains(&p) {
            order.push(p);
        }
        out[p].series.push(s);
    }
    let mut out: Vec<(usize, Panel)> = out.into_iter().enumerate().collect();
    out.sort_by_key(|(p, _)| order.iter().position(|o| o == p));
    out.into_iter().map(|(_, panel)| panel).collect()
}

/// Short, distinct names for tags: the last segment (`GameplayCue.Duel.Hit` → `Hit`), or as
/// many trailing segments as it takes to tell two tags apart (`Hit.Light`, `Kick.Light`).
pub fn short_labels(tags: &[&str]) -> Vec<String> {
    let tail = |t: &str, n: usize| -> String {
        let parts: Vec<&str> = t.split('.').collect();
        parts[parts.len().saturating_sub(n)..].join(".")
    };
    let mut depth = vec![1usize; tags.len()];
    loop {
        let labels: Vec<String> = tags.iter().zip(&depth).map(|(t, n)| tail(t, *n)).collect();
        let mut grown = false;
        for i in 0..tags.len() {
            let clash = (0..tags.len()).any(|j| j != i && labels[j] == labels[i]);
            if clash && depth[i] < tags[i].split('.').count() {
                depth[i] += 1;
                grown = true;
            }
        }
        if !grown {
            return labels;
        }
    }
}

/// A value as a person writes it: at most three decimals, no trailing zeros (`0.15`, `2.5`,
/// `150`), so a fixed-point 0.15 does not show as 0.14999999990686774.
pub fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    if s == "-0" { "0".to_string() } else { s.to_string() }
}

/// One cue on the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mark {
    /// Index into [`Cues::tags`].
    lane: usize,
    /// The sub-row (entity).
    row: usize,
    frame: u32,
    /// `None` for a burst (a tick); `Some(end)` for an active span (a bar); `Some(u32::MAX)`
    /// while still open (drawn to the end of the chart).
    end: Option<u32>,
}

/// The cue timeline: bursts (ticks) and active spans (bars), one lane per cue tag, one sub-row
/// per entity.
#[derive(Clone, Debug, Default)]
pub struct Cues {
    tags: Vec<String>,
    marks: Vec<Mark>,
}

impl Cues {
    fn lane(&mut self, tag: &str) -> usize {
        match self.tags.iter().position(|t| t == tag) {
            Some(i) => i,
            None => {
                self.tags.push(tag.to_string());
                self.tags.len() - 1
            }
        }
    }

    /// A burst of `tag` on timeline row `row` at `frame` (a tick).
    pub fn burst(&mut self, tag: &str, row: usize, frame: u32) {
        let lane = self.lane(tag);
        self.marks.push(Mark { lane, row, frame, end: None });
    }

    /// `tag` became active on row `row` at `frame` (a bar, until [`Cues::end`]).
    pub fn start(&mut self, tag: &str, row: usize, frame: u32) {
        let lane = self.lane(tag);
        self.marks.push(Mark { lane, row, frame, end: Some(u32::MAX) });
    }

    /// The oldest active `tag` on row `row` ended at `frame` (ignored when none is active).
    pub fn end(&mut self, tag: &str, row: usize, frame: u32) {
        let Some(lane) = self.tags.iter().position(|t| t == tag) else { return };
        let open = self
            .marks
            .iter_mut()
            .find(|m| m.lane == lane && m.row == row && m.end == Some(u32::MAX));
        if let Some(m) = open {
            m.end = Some(frame);
        }
    }

    /// The number of cues recorded (bursts and spans).
    pub fn count(&self) -> usize {
        self.marks.len()
    }
}

/// A whole chart: title, panels over a shared frame axis, and the cue timeline.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    /// The title, at the top.
    pub title: String,
    /// An optional second line under the title (what was left out, filters).
    pub note: String,
    /// The frame axis runs from 0 to this.
    pub frames: u32,
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
    /// The timeline's sub-row names (entities), in row order.
    pub rows: Vec<String>,
    /// The cue timeline (drawn below the panels when not empty).
    pub cues: Cues,
}

/// The chart width in pixels.
const WIDTH: u32 = 1280;
/// The legend column on the right.
const LEGEND_WIDTH: u32 = 210;
/// The left margin holding y tick labels, axis names and cue names.
const LEFT: u32 = 96;
/// Space around the chart.
const MARGIN: u32 = 12;
/// The height of a data panel's plotting area when its legend is short.
const PANEL_HEIGHT: u32 = 190;
/// The gap between stacked panels (room for the tick labels at their edges).
const GAP: u32 = 16;
/// One legend line.
const LEGEND_LINE: u32 = 18;
/// The frame axis labels under the last panel.
const X_AXIS: u32 = 52;
/// The legend's font size in pixels (plotters scales SVG text by about 0.8).
const FONT: f64 = 15.0;

/// Colour families by timeline row: the first fighter's series are warm, the second's cool,
/// and so on; the first colour of a family is the row's cue colour.
const FAMILIES: [[(u8, u8, u8); 4]; 4] = [
    [(214, 39, 40), (255, 127, 14), (140, 86, 75), (227, 119, 194)],
    [(31, 119, 180), (23, 190, 207), (148, 103, 189), (127, 127, 127)],
    [(44, 160, 44), (188, 189, 34), (23, 120, 90), (100, 140, 60)],
    [(120, 60, 160), (200, 80, 160), (90, 90, 200), (60, 60, 60)],
];
/// Colours for series without a row (or more rows than families), in order.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

fn rgb((r, g, b): (u8, u8, u8)) -> RGBColor {
    RGBColor(r, g, b)
}

/// The colour of timeline row `row`.
fn row_colour(row: usize) -> RGBColor {
    match FAMILIES.get(row) {
        Some(f) => rgb(f[0]),
        None => rgb(PALETTE[row % PALETTE.len()]),
    }
}

/// The colours of a panel's series: by row family when every series has a row that has a
/// family, otherwise from the palette in order.
fn panel_colours(panel: &Panel) -> Vec<RGBColor> {
    let by_family = panel.series.iter().all(|s| s.row.is_some_and(|r| r < FAMILIES.len()));
    let mut used = [0usize; FAMILIES.len()];
    panel
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| match s.row {
            Some(r) if by_family => {
                let k = used[r];
                used[r] += 1;
                if k < FAMILIES[r].len() {
                    rgb(FAMILIES[r][k])
                } else {
                    rgb(PALETTE[i % PALETTE.len()])
                }
            }
            _ => rgb(PALETTE[i % PALETTE.len()]),
        })
        .collect()
}

/// About how wide `text` is at `size` pixels in a sans-serif font.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// `text` cut (with "…") to fit `width` pixels at `size`.
fn fit(text: &str, size: f64, width: f64) -> String {
    if text_width(text, size) <= width {
        return text.to_string();
    }
    let keep = ((width / (size * 0.58)) as usize).saturating_sub(1);
    let mut s: String = text.chars().take(keep).collect();
    s.push('…');
    s
}

/// The y range drawn for values from `lo` to `hi`, padded so lines clear the frame.
fn y_range(lo: f64, hi: f64) -> (f64, f64) {
    let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) * 0.4 };
    let pad = span * 0.08;
    (lo - pad, hi + pad)
}

/// Decimals for y tick labels over a span: enough for its tick step (about a fifth of it).
fn decimals(span: f64) -> usize {
    let step = span / 5.0;
    if step.is_finite() && step > 0.0 { (-step.log10()).ceil().clamp(0.0, 6.0) as usize } else { 2 }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

impl Chart {
    /// An empty chart over frames `0..frames`.
    pub fn new(title: impl Into<String>, frames: u32) -> Chart {
        Chart { title: title.into(), frames, ..Chart::default() }
    }

    /// The number of series over all panels.
    pub fn series_count(&self) -> usize {
        self.panels.iter().map(|p| p.series.len()).sum()
    }

    /// The timeline's lanes: tag indices sorted by tag name, with their short labels.
    fn lanes(&self) -> Vec<(usize, String)> {
        let mut order: Vec<usize> = (0..self.cues.tags.len()).collect();
        order.sort_by(|a, b| self.cues.tags[*a].cmp(&self.cues.tags[*b]));
        let names: Vec<&str> = order.iter().map(|i| self.cues.tags[*i].as_str()).collect();
        order.into_iter().zip(short_labels(&names)).collect()
    }

    /// The height of one timeline lane (one sub-row per entity).
    fn lane_height(&self) -> u32 {
        (8 * self.rows.len().max(1) as u32 + 6).max(20)
    }

    /// Draws the chart as SVG text. Errors are plotters' drawing failures, as a message.
    pub fn to_svg(&self) -> Result<String, String> {
        let panels: Vec<&Panel> = self.panels.iter().filter(|p| !p.series.is_empty()).collect();
        let lanes = self.lanes();
        let header = 44 + if self.note.is_empty() { 0 } else { 22 };
        let heights: Vec<u32> = panels
            .iter()
            .map(|p| PANEL_HEIGHT.max(LEGEND_LINE * p.series.len() as u32 + 12))
            .collect();
        let cue_height = if lanes.is_empty() {
            0
        } else {
            // The strip must also hold its legend (a line per row and one of explanation).
            (self.lane_height() * lanes.len() as u32)
                .max(LEGEND_LINE * (self.rows.len() as u32 + 1) + 12)
        };
        let blocks = panels.len() + usize::from(cue_height > 0);
        let height = header
            + heights.iter().sum::<u32>()
            + cue_height
            + GAP * blocks.saturating_sub(1) as u32
            + X_AXIS
            + MARGIN;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            self.draw(&root, header, &panels, &heights, &lanes, cue_height)?;
            root.present().map_err(|e| e.to_string())?;
        }
        // plotters writes unfilled polylines as `fill="none" opacity="1"`; ImageMagick's SVG
        // renderer then fills them black. The stroke opacity says the same to every renderer.
        Ok(svg.replace("fill=\"none\" opacity=\"", "fill=\"none\" stroke-opacity=\""))
    }

    fn draw(
        &self,
        root: &Area<'_>,
        header: u32,
        panels: &[&Panel],
        heights: &[u32],
        lanes: &[(usize, String)],
        cue_height: u32,
    ) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| e.to_string();
        let plot_right = WIDTH - LEGEND_WIDTH;
        let centre = ((MARGIN + LEFT + plot_right) / 2) as i32;
        // Text is anchored at its vertical centre: renderers disagree on the others.
        let title =
            ("sans-serif", 24).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        // Title and note are centred over the plots and cut to stay on the chart.
        let room = f64::from(2 * (centre as u32 - MARGIN));
        let text = fit(&self.title, 24.0 * 0.8, room);
        root.draw(&Text::new(text, (centre, 22), title)).map_err(|e| fail(&e))?;
        if !self.note.is_empty() {
            let note = ("sans-serif", 15)
                .into_font()
                .color(&RGBColor(80, 80, 80))
                .pos(Pos::new(HPos::Center, VPos::Center));
            let text = fit(&self.note, 15.0 * 0.8, room);
            root.draw(&Text::new(text, (centre, 48), note)).map_err(|e| fail(&e))?;
        }
        let frames = self.frames.max(1);
        let mut top = header;
        let blocks = panels.len() + usize::from(cue_height > 0);
        for (i, (panel, h)) in panels.iter().zip(heights).enumerate() {
            let last = i + 1 == blocks;
            self.draw_panel(root, panel, top, *h, last, frames)?;
            top += h + GAP;
        }
        if cue_height > 0 {
            self.draw_cues(root, lanes, top, cue_height, frames)?;
        }
        Ok(())
    }

    /// The area of a block whose plotting area is `h` pixels high from `top`, with the frame
    /// axis labels under it when `last`.
    fn block<'a>(root: &Area<'a>, top: u32, h: u32, last: bool) -> Area<'a> {
        let below = if last { X_AXIS } else { 0 };
        root.clone().shrink((MARGIN, top), (WIDTH - LEGEND_WIDTH - MARGIN, h + below))
    }

    fn mesh_style() -> ShapeStyle {
        ShapeStyle::from(&RGBColor(225, 225, 225)).stroke_width(1)
    }

    fn draw_panel(
        &self,
        root: &Area<'_>,
        panel: &Panel,
        top: u32,
        h: u32,
        last: bool,
        frames: u32,
    ) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| e.to_string();
        let (lo, hi) = panel
            .series
            .iter()
            .filter_map(Series::bounds)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (lo, hi)| (a.min(lo), b.max(hi)));
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let (y0, y1) = y_range(lo, hi);
        let places = decimals(y1 - y0);
        let y_label = move |v: &f64| format!("{v:.places$}");
        let area = Self::block(root, top, h, last);
        let mut chart = ChartBuilder::on(&area)
            .y_label_area_size(LEFT)
            .x_label_area_size(if last { X_AXIS } else { 0 })
            .build_cartesian_2d(0u32..frames, y0..y1)
            .map_err(|e| fail(&e))?;
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(12)
            .y_labels(5)
            .y_label_formatter(&y_label)
            .label_style(("sans-serif", 14))
            .bold_line_style(Self::mesh_style())
            .light_line_style(TRANSPARENT)
            .axis_style(ShapeStyle::from(&RGBColor(90, 90, 90)).stroke_width(1));
        if last {
            mesh.x_desc("frame").axis_desc_style(("sans-serif", 15));
        }
        mesh.draw().map_err(|e| fail(&e))?;

        let colours = panel_colours(panel);
        for (s, colour) in panel.series.iter().zip(&colours) {
            let style = ShapeStyle::from(colour).stroke_width(2);
            let points = s.points.iter().copied();
            chart.draw_series(LineSeries::new(points, style)).map_err(|e| fail(&e))?;
        }
        // The legend, beside the panel: a colour swatch and the label.
        let x = (WIDTH - LEGEND_WIDTH + 12) as i32;
        let font =
            ("sans-serif", FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        let room = f64::from(LEGEND_WIDTH - 12 - 30 - MARGIN);
        for (k, (s, colour)) in panel.series.iter().zip(&colours).enumerate() {
            let y = (top + 8 + LEGEND_LINE * k as u32) as i32;
            root.draw(&Rectangle::new([(x, y - 2), (x + 22, y + 2)], colour.filled()))
                .map_err(|e| fail(&e))?;
            let label = fit(&s.label, FONT * 0.8, room);
            root.draw(&Text::new(label, (x + 30, y), font.clone())).map_err(|e| fail(&e))?;
        }
        Ok(())
    }

    fn draw_cues(
        &self,
        root: &Area<'_>,
        lanes: &[(usize, String)],
        top: u32,
        h: u32,
        frames: u32,
    ) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| e.to_string();
        let area = Self::block(root, top, h, true);
        let n = lanes.len() as f64;
        let mut chart = ChartBuilder::on(&area)
            .y_label_area_size(LEFT)
            .x_label_area_size(X_AXIS)
            .build_cartesian_2d(0u32..frames, 0.0..n)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_labels(12)
            .y_labels(0)
            .disable_y_mesh()
            .label_style(("sans-serif", 14))
            .x_desc("frame")
            .axis_desc_style(("sans-serif", 15))
            .bold_line_style(Self::mesh_style())
            .light_line_style(TRANSPARENT)
            .axis_style(ShapeStyle::from(&RGBColor(90, 90, 90)).stroke_width(1))
            .draw()
            .map_err(|e| fail(&e))?;
        let px = |frame: u32, y: f64| chart.backend_coord(&(frame.min(frames), y));
        let rows = self.rows.len().max(1);
        let font =
            ("sans-serif", 14).into_font().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
        // Lanes top to bottom in tag order; lane k spans y from n-k-1 to n-k.
        let lane_of = |tag: usize| lanes.iter().position(|(t, _)| *t == tag).unwrap_or(0);
        for (k, (_, label)) in lanes.iter().enumerate() {
            let (y_top, y_bottom) = (n - k as f64, n - k as f64 - 1.0);
            let (x0, top_px) = px(0, y_top);
            let (x1, bottom_px) = px(frames, y_bottom);
            if k % 2 == 0 {
                let band = RGBColor(243, 243, 243).filled();
                root.draw(&Rectangle::new([(x0, top_px), (x1, bottom_px)], band))
                    .map_err(|e| fail(&e))?;
            }
            let label = fit(label, 14.0 * 0.8, f64::from(LEFT - 14));
            root.draw(&Text::new(label, (x0 - 8, (top_px + bottom_px) / 2), font.clone()))
                .map_err(|e| fail(&e))?;
        }
        // Bars first, ticks over them.
        let mut marks: Vec<&Mark> = self.cues.marks.iter().collect();
        marks.sort_by_key(|m| m.end.is_none());
        for m in marks {
            let k = lane_of(m.lane) as f64;
            let sub = 1.0 / rows as f64;
            let row_top = n - k - sub * m.row.min(rows - 1) as f64;
            let (x, y_top) = px(m.frame, row_top - sub * 0.12);
            let (_, y_bottom) = px(m.frame, row_top - sub * 0.88);
            let colour = row_colour(m.row);
            let shape = match m.end {
                None => Rectangle::new([(x - 1, y_top), (x + 1, y_bottom)], colour.filled()),
                Some(end) => {
                    let (x_end, _) = px(end.min(frames), 0.0);
                    let (y_top, y_bottom) = (y_top + 2, y_bottom - 2);
                    let style = colour.mix(0.45).filled();
                    Rectangle::new([(x, y_top), (x_end.max(x + 2), y_bottom)], style)
                }
            };
            root.draw(&shape).map_err(|e| fail(&e))?;
        }
        // The legend: whose row is which, and what ticks and bars mean.
        let x = (WIDTH - LEGEND_WIDTH + 12) as i32;
        let legend =
            ("sans-serif", FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        let room = f64::from(LEGEND_WIDTH - 12 - 30 - MARGIN);
        let mut y = (top + 8) as i32;
        let line = LEGEND_LINE as i32;
        for (r, name) in self.rows.iter().enumerate() {
            let colour = row_colour(r);
            root.draw(&Rectangle::new([(x + 10, y - 6), (x + 12, y + 6)], colour.filled()))
                .map_err(|e| fail(&e))?;
            // Which sub-row of each lane is this entity's.
            let text = match rows {
                1 => name.clone(),
                2 => format!("{name} ({} row)", if r == 0 { "top" } else { "bottom" }),
                _ => format!("{name} (row {})", r + 1),
            };
            let text = fit(&text, FONT * 0.8, room);
            root.draw(&Text::new(text, (x + 30, y), legend.clone())).map_err(|e| fail(&e))?;
            y += line;
        }
        let grey = RGBColor(90, 90, 90);
        let small = ("sans-serif", 13).into_font().color(&grey);
        let small = small.pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new("tick: a burst; bar: active", (x, y + 2), small))
            .map_err(|e| fail(&e))?;
        Ok(())
    }

    /// Writes the chart to `path` as SVG and returns the number of bytes written. Errors (an
    /// unwritable path, a drawing failure) are a message that names the path.
    pub fn write_svg(&self, path: &Path) -> Result<u64, String> {
        let fail =
            |e: &dyn std::fmt::Display| format!("cannot write the chart {}: {e}", path.display());
        let svg = self.to_svg().map_err(|e| fail(&e))?;
        std::fs::write(path, &svg).map_err(|e| fail(&e))?;
        Ok(svg.len() as u64)
    }
}
