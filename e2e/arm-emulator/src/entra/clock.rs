//! Seconds since the Unix epoch, as tokens carry them, and the ways Entra and ARM print them.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;

/// A point in time, in whole seconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct UnixTime(pub(crate) i64);

impl UnixTime {
    pub(crate) fn from_system(time: SystemTime) -> Self {
        let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
        Self(i64::try_from(seconds).unwrap_or(i64::MAX))
    }

    pub(crate) fn plus(self, seconds: i64) -> Self {
        Self(self.0.saturating_add(seconds))
    }

    fn civil(self) -> Option<OffsetDateTime> {
        OffsetDateTime::from_unix_timestamp(self.0).ok()
    }

    /// `2024-05-01 13:04:05Z`, as Entra stamps its error answers.
    pub(crate) fn entra(self) -> String {
        self.civil().map_or_else(
            || self.0.to_string(),
            |t| {
                format!(
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02}Z",
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute(),
                    t.second()
                )
            },
        )
    }

    /// `2024-05-01T13:04:05Z` (ISO 8601).
    pub(crate) fn iso(self) -> String {
        self.entra().replacen(' ', "T", 1)
    }

    /// `5/1/2024 1:04:05 PM`, the .NET invariant format ARM's messages use.
    pub(crate) fn dotnet(self) -> String {
        self.civil().map_or_else(
            || self.0.to_string(),
            |t| {
                let (hour, meridiem) = match t.hour() {
                    0 => (12, "AM"),
                    hour @ 1..12 => (hour, "AM"),
                    12 => (12, "PM"),
                    hour => (hour - 12, "PM"),
                };
                format!(
                    "{}/{}/{} {hour}:{:02}:{:02} {meridiem}",
                    u8::from(t.month()),
                    t.day(),
                    t.year(),
                    t.minute(),
                    t.second()
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::UnixTime;

    #[test]
    fn times_print_as_the_services_print_them() {
        let t = UnixTime(1_714_568_645); // 2024-05-01 13:04:05 UTC
        assert_eq!(t.entra(), "2024-05-01 13:04:05Z");
        assert_eq!(t.iso(), "2024-05-01T13:04:05Z");
        assert_eq!(t.dotnet(), "5/1/2024 1:04:05 PM");
        assert_eq!(UnixTime(0).dotnet(), "1/1/1970 12:00:00 AM");
        assert_eq!(UnixTime(i64::MAX).entra(), i64::MAX.to_string());
    }
}
