//! `dpuctl experiment run --html FILE`: one self-contained page (no scripts, no external
//! files) with an SVG per experiment, drawn by plotters' SVG backend: every trial as a
//! point, the phases side by side in the order they ran, each phase's median as a bar,
//! and B's effect drawn as its confidence interval (B − A added to A's median, beside each
//! B phase), so a reader sees at a glance whether the A phases agree and whether B's
//! interval clears A.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::design::Arm;
use super::run::RunReport;
use super::verdict::{number, ExperimentVerdict};
use crate::render::escape;

/// Why the page could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the experiment plot: {0}")]
pub struct PageError(String);

/// One experiment on the page: its title (the plan file) and its report.
#[derive(Debug, Clone, Copy)]
pub struct PageEntry<'a> {
    /// The heading, e.g. the plan file's name.
    pub title: &'a str,
    /// The run.
    pub report: &'a RunReport,
}

/// The whole page.
pub fn render(entries: &[PageEntry<'_>]) -> Result<String, PageError> {
    let mut html = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>dpuctl experiment</title><style>body{font-family:sans-serif;margin:24px;\
         max-width:900px}table{border-collapse:collapse}td,th{border:1px solid #ccc;\
         padding:3px 8px;text-align:right}th{background:#f4f4f4}.v{font-weight:bold}\
         </style></head><body>\n",
    );
    for entry in entries {
        let r = entry.report;
        let _ = writeln!(
            html,
            "<section><h2>{}</h2><p><span class=\"v\">{}</span>: {}</p>\
             <p>knob: {} (A = {}, B = {}); metric: {}</p>",
            escape(entry.title),
            r.analysis.verdict.as_str(),
            escape(&r.analysis.summary),
            escape(&r.knob),
            escape(&r.a),
            escape(&r.b),
            escape(&r.metric),
        );
        html.push_str(&svg(r)?);
        html.push_str("\n<table><tr><th>phase</th><th>value</th><th>median</th><th>MAD</th><th>trials</th></tr>");
        for phase in &r.analysis.phases {
            let value = match phase.arm {
                Arm::A => &r.a,
                Arm::B => &r.b,
            };
            let trials: Vec<String> = phase.trials.iter().map(|t| number(*t)).collect();
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&phase.label),
                escape(value),
                phase.median.map(number).unwrap_or_default(),
                phase.mad.map(number).unwrap_or_default(),
                trials.join(" "),
            );
        }
        html.push_str("</table>");
        trial_counters(&mut html, r);
        html.push_str("</section>\n");
    }
    html.push_str("</body></html>\n");
    Ok(html)
}

/// Each trial's RDMA counter evidence (`roce-perf`), refused trials with their reason:
/// what every number on the plot was believed on, and what was left off it.
fn trial_counters(html: &mut String, r: &RunReport) {
    if r.trials.iter().all(|t| t.rdma.is_none() && t.counted) {
        return;
    }
    html.push_str(
        "\n<table><tr><th>trial</th><th>value</th><th>RDMA packets moved</th>\
         <th>payload packets</th><th>counters say</th><th>counted</th></tr>",
    );
    for t in &r.trials {
        let (moved, payload, path) = t.rdma.as_ref().map_or_else(
            || (String::new(), String::new(), String::new()),
            |e| {
                (
                    e.packets_delta
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "unknown".to_owned()),
                    e.payload_packets.to_string(),
                    format!("{:?}", e.path).to_lowercase(),
                )
            },
        );
        let counted = match &t.refused {
            None => "yes".to_owned(),
            Some(why) => format!("REFUSED: {}", escape(why)),
        };
        let _ = write!(
            html,
            "<tr><td>{} #{}</td><td>{}</td><td>{moved}</td><td>{payload}</td><td>{path}</td>\
             <td>{counted}</td></tr>",
            escape(&t.phase),
            t.trial,
            number(t.value),
        );
    }
    html.push_str("</table>");
}

/// The colour of each arm's points.
fn colour(arm: Arm) -> RGBColor {
    match arm {
        Arm::A => RGBColor(0x1f, 0x77, 0xb4),
        Arm::B => RGBColor(0xd6, 0x27, 0x28),
    }
}

/// One experiment's plot as an `<svg>` element.
fn svg(report: &RunReport) -> Result<String, PageError> {
    let draw = |e: &dyn std::fmt::Display| PageError(e.to_string());
    let analysis = &report.analysis;
    let phases = &analysis.phases;
    let effect_bar = analysis
        .effect
        .as_ref()
        .map(|e| (e.a_median + e.interval.low, e.a_median + e.interval.high));
    let values: Vec<f64> = phases
        .iter()
        .flat_map(|p| p.trials.iter().copied())
        .chain(effect_bar.iter().flat_map(|(lo, hi)| [*lo, *hi]))
        .filter(|v| v.is_finite())
        .collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (low, high) = if low.is_finite() && high.is_finite() {
        let pad = ((high - low) * 0.15).max(high.abs() * 0.01).max(1e-9);
        (low - pad, high + pad)
    } else {
        (0.0, 1.0)
    };
    let count = phases.len().max(1);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (760, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let caption = format!("{}: {} → {}", report.knob, report.a, report.b);
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(14)
            .x_label_area_size(34)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(count as f64 - 0.5), low..high)
            .map_err(|e| draw(&e))?;
        let labels: Vec<String> = phases.iter().map(|p| p.label.clone()).collect();
        let label_of = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(2)
            .x_labels(count * 2 + 1)
            .x_label_formatter(&label_of)
            .y_desc(report.metric.as_str())
            .y_label_formatter(&|y| number(*y))
            .draw()
            .map_err(|e| draw(&e))?;
        for (i, phase) in phases.iter().enumerate() {
            let centre = i as f64;
            let n = phase.trials.len().max(1) as f64;
            let colour = colour(phase.arm);
            let points = phase.trials.iter().enumerate().map(|(t, v)| {
                let x = centre - 0.3 + 0.6 * (t as f64 + 0.5) / n;
                Circle::new((x, *v), 4, colour.filled())
            });
            chart.draw_series(points).map_err(|e| draw(&e))?;
            if let Some(median) = phase.median {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(centre - 0.38, median), (centre + 0.38, median)],
                        colour.stroke_width(3),
                    )))
                    .map_err(|e| draw(&e))?;
            }
            if let (Arm::B, Some((lo, hi))) = (phase.arm, effect_bar) {
                let x = centre + 0.44;
                let black = BLACK.stroke_width(2);
                let bar = vec![
                    PathElement::new(vec![(x, lo), (x, hi)], black),
                    PathElement::new(vec![(x - 0.04, lo), (x + 0.04, lo)], black),
                    PathElement::new(vec![(x - 0.04, hi), (x + 0.04, hi)], black),
                ];
                chart.draw_series(bar).map_err(|e| draw(&e))?;
            }
        }
        if let Some(effect) = &analysis.effect {
            let line = PathElement::new(
                vec![
                    (-0.5, effect.a_median),
                    (count as f64 - 0.5, effect.a_median),
                ],
                colour(Arm::A).mix(0.4).stroke_width(1),
            );
            chart
                .draw_series(std::iter::once(line))
                .map_err(|e| draw(&e))?;
        }
        let verdict = match analysis.verdict {
            ExperimentVerdict::Inconclusive => "INCONCLUSIVE",
            other => other.as_str(),
        };
        root.draw(&Text::new(
            format!("{verdict} — bar beside B: A's median + B−A interval"),
            (90, 360),
            ("sans-serif", 12),
        ))
        .map_err(|e| draw(&e))?;
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::design::{Direction, Order};
    use crate::experiment::stats::{analyse, StatsConfig};

    fn report(knob: &str) -> RunReport {
        let phases = vec![
            vec![100.0, 101.0, 99.5, 100.4, 100.2],
            vec![120.0, 121.0, 119.0, 120.5, 119.8],
            vec![100.1, 100.8, 99.7, 100.0, 100.3],
        ];
        RunReport {
            knob: knob.to_owned(),
            a: "1500".to_owned(),
            b: "9000".to_owned(),
            metric: "BW <Gb/s>".to_owned(),
            analysis: analyse(
                Order::Aba,
                &phases,
                Direction::Higher,
                &StatsConfig::default(),
            )
            .expect("analysed"),
            trials: Vec::new(),
            restored: Some("1500".to_owned()),
        }
    }

    #[test]
    fn one_svg_per_experiment_with_every_trial_and_text_escaped() {
        let (one, two) = (report("mtu of <eth0>"), report("env NCCL_ALGO"));
        let page = render(&[
            PageEntry {
                title: "a&b.toml",
                report: &one,
            },
            PageEntry {
                title: "c.toml",
                report: &two,
            },
        ])
        .expect("drawn");
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(
            page.matches("<circle").count(),
            30,
            "15 trials per experiment"
        );
        assert!(page.contains("a&amp;b.toml"));
        assert!(page.contains("mtu of &lt;eth0&gt;"));
        assert!(!page.contains("<eth0>"));
        assert!(page.contains("IMPROVEMENT"));
        assert!(!page.contains("<script"));
    }
}
