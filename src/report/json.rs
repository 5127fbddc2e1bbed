//! The JSON form of a batch report: what `kwb batch --format json` prints and what
//! `--baseline` reads back. Its shape is documented in `docs/batch-json.md`; reading checks the
//! `schema` number first, so an old baseline fails with a clear message instead of a confusing
//! missing-field error.

use super::{BatchReport, ReportError, SCHEMA};

/// Pretty-printed JSON, with a trailing newline.
pub fn to_json(report: &BatchReport) -> String {
    // Serializing plain structs of strings and finite numbers cannot fail.
    let mut s = serde_json::to_string_pretty(report).expect("a BatchReport always serializes");
    s.push('\n');
    s
}

/// Reads a report, refusing any `schema` other than [`SCHEMA`]. Unknown fields are ignored
/// (fields are only added within one schema number); missing optional fields read as `null`.
pub fn from_json(text: &str) -> Result<BatchReport, ReportError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let found = value
        .get("schema")
        .and_then(serde_json::Value::as_u64)
        .ok_or(ReportError::NoSchema)?;
    if found != u64::from(SCHEMA) {
        return Err(ReportError::Schema {
            found,
            expected: SCHEMA,
        });
    }
    Ok(serde_json::from_value(value)?)
}

/// Reads a number back that serde_json wrote as `null` because it was NaN or infinite (a check
/// on an output full of NaN), as NaN, so such a report still loads as a baseline.
pub(crate) fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::sample_report;

    #[test]
    fn the_timing_fields_round_trip_and_old_reports_read_without_them() {
        let mut report = sample_report();
        report.device.as_mut().unwrap().stream_kernel_gbps = Some(3210.5);
        let t = report.results[0].timing.as_mut().unwrap();
        t.timer = Some(crate::common::stats::Timer::Cupti);
        t.event_median_us = Some(9.25);
        t.busy_median_us = Some(7.5);
        t.l2_resident = Some(true);
        let text = to_json(&report);
        assert!(text.contains("\"timer\": \"cupti\""), "{text}");
        assert!(text.contains("\"event_median_us\": 9.25"), "{text}");
        assert!(text.contains("\"l2_resident\": true"), "{text}");
        assert!(text.contains("\"stream_kernel_gbps\": 3210.5"), "{text}");
        assert_eq!(from_json(&text).unwrap(), report);
        // A report written before these fields existed reads back with them absent.
        let old = to_json(&sample_report());
        assert!(!old.contains("timer") && !old.contains("stream_kernel_gbps"));
        let back = from_json(&old).unwrap();
        assert_eq!(back.results[0].timing.as_ref().unwrap().timer, None);
        assert_eq!(back.device.unwrap().stream_kernel_gbps, None);
    }

    #[test]
    fn round_trip() {
        let report = sample_report();
        let text = to_json(&report);
        assert_eq!(from_json(&text).unwrap(), report);
        // Statistics computed from real-looking samples survive too, to the last bit or two:
        // serde_json's default float parser may be one ulp off (its `float_roundtrip` feature
        // makes it exact), far below anything a comparison looks at.
        let mut r = report.clone();
        let samples: Vec<f64> = (0..997).map(|i| 10.0 + (i % 13) as f64 * 0.0137).collect();
        let t = crate::common::stats::summarize(&samples).unwrap();
        r.results[0].timing = Some(t.clone());
        let back = from_json(&to_json(&r)).unwrap().results[0]
            .timing
            .clone()
            .unwrap();
        let near = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * a.abs();
        assert_eq!(back.samples, t.samples);
        assert!(near(back.median_us, t.median_us) && near(back.std_us, t.std_us));
        assert!(near(back.cv, t.cv) && near(back.rel_std_error, t.rel_std_error));
        assert!(text.contains("\"status\": \"check_failed\""));
        assert!(text.contains("\"stop\": \"converged\""));
        assert!(text.contains("\"mode\": \"hot\""));
    }

    #[test]
    fn rejects_other_schema() {
        let mut v: serde_json::Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
        v["schema"] = 2.into();
        let err = from_json(&v.to_string()).unwrap_err();
        assert!(matches!(
            err,
            ReportError::Schema {
                found: 2,
                expected: 1
            }
        ));
        let msg = err.to_string();
        assert!(
            msg.contains("schema 2") && msg.contains("reads schema 1"),
            "{msg}"
        );
        assert!(matches!(
            from_json("{\"results\": []}"),
            Err(ReportError::NoSchema)
        ));
        assert!(matches!(from_json("not json"), Err(ReportError::Parse(_))));
    }

    #[test]
    fn tolerates_added_and_missing_optional_fields() {
        let mut v: serde_json::Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
        v["future_field"] = "x".into();
        let r0 = &mut v["results"][0];
        r0.as_object_mut().unwrap().remove("intensity");
        r0["also_new"] = 1.into();
        let back = from_json(&v.to_string()).unwrap();
        assert_eq!(back.results[0].intensity, None);
        assert_eq!(back.results.len(), 6);
        // A check whose error was not finite is written as null and read back as NaN.
        let mut r = sample_report();
        r.results[1].check.as_mut().unwrap().max_abs_error = f64::INFINITY;
        let text = to_json(&r);
        assert!(text.contains("\"max_abs_error\": null"));
        assert!(from_json(&text).unwrap().results[1]
            .check
            .as_ref()
            .unwrap()
            .max_abs_error
            .is_nan());
    }
}
