//! Timestamps as ARM writes them in resource bodies and operation statuses.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;

/// `2026-11-21T09:30:00.1234567Z`: UTC, seconds with seven fractional digits, as Azure writes them.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    let Ok(t) = OffsetDateTime::from_unix_timestamp(seconds) else {
        return seconds.to_string();
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:07}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        since_epoch.subsec_nanos() / 100
    )
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::rfc3339;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.0000000Z");
        let leap_day = UNIX_EPOCH + Duration::from_hours(264_384) + Duration::from_millis(1500);
        assert_eq!(rfc3339(leap_day), "2000-02-29T00:00:01.5000000Z");
        let later = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(later), "2026-11-18T11:06:40.0000000Z");
    }
}
