//! Kubernetes versions as the AKS kinds carry them: `v1.33.2`, checked and ordered as semantic
//! versions the way CAPZ orders them (Go's `golang.org/x/mod/semver`, with a `v` added when
//! missing): anything that is not a version sorts before every version.

use std::cmp::Ordering;

/// A version read: its three numbers and its pre-release identifiers (empty for a release).
#[derive(Debug, PartialEq, Eq)]
struct Version<'a> {
    numbers: [u64; 3],
    pre_release: Vec<&'a str>,
}

/// Whether `part` is a number without leading zeros.
fn is_number(part: &str) -> bool {
    !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && (part == "0" || !part.starts_with('0'))
}

/// `text` read as `v<major>.<minor>.<patch>[-<pre-release>][+<build>]`; a missing minor or patch
/// counts as 0, as Go's ordering reads them.
fn parse(text: &str) -> Option<Version<'_>> {
    let text = text.strip_prefix('v')?;
    let (text, build) = match text.split_once('+') {
        Some((text, build)) => (text, Some(build)),
        None => (text, None),
    };
    if let Some(build) = build
        && !build
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    {
        return None;
    }
    let (core, pre_release) = match text.split_once('-') {
        Some((core, pre)) => {
            let parts: Vec<&str> = pre.split('.').collect();
            let valid = parts.iter().all(|part| {
                !part.is_empty()
                    && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && (!part.bytes().all(|b| b.is_ascii_digit()) || is_number(part))
            });
            if !valid {
                return None;
            }
            (core, parts)
        }
        None => (text, Vec::new()),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 || !parts.iter().all(|part| is_number(part)) {
        return None;
    }
    // The short forms (`v1`, `v1.2`) may carry neither a pre-release nor a build.
    if parts.len() < 3 && (!pre_release.is_empty() || build.is_some()) {
        return None;
    }
    let mut numbers = [0; 3];
    for (number, part) in numbers.iter_mut().zip(&parts) {
        *number = part.parse().ok()?;
    }
    Some(Version { numbers, pre_release })
}

/// Whether `version` is what CAPZ takes as `spec.version`: `v`, three numbers without leading
/// zeros, then anything of letters, digits and `-_.+` (a pre-release or build, not checked
/// further).
pub(crate) fn is_valid(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let mut numbers = rest.splitn(3, '.');
    let (Some(major), Some(minor), Some(rest)) = (numbers.next(), numbers.next(), numbers.next()) else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (patch, suffix) = rest.split_at(digits);
    [major, minor, patch].iter().all(|part| is_number(part))
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+'))
}

fn compare_pre_release(a: &[&str], b: &[&str]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    for (x, y) in a.iter().zip(b) {
        let order = match (is_number(x), is_number(y)) {
            (true, true) => x.len().cmp(&y.len()).then_with(|| x.cmp(y)),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// How `a` compares with `b`, each read with a `v` added when it lacks one; text that is no
/// version comes before every version and equals any other such text.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    let with_v = |text: &str| {
        if text.starts_with('v') {
            text.to_owned()
        } else {
            format!("v{text}")
        }
    };
    let (a, b) = (with_v(a), with_v(b));
    match (parse(&a), parse(&b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x
            .numbers
            .cmp(&y.numbers)
            .then_with(|| compare_pre_release(&x.pre_release, &y.pre_release)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_need_the_prefix_and_three_numbers() {
        for valid in ["v1.33.2", "v0.0.0", "v1.30.0-rc.1", "v1.30.1+build.7", "v1.2.3_x"] {
            assert!(is_valid(valid), "{valid}");
        }
        for invalid in ["1.33.2", "v1.33", "v01.2.3", "v1.2.3 ", "v1.2.x", "", "v"] {
            assert!(!is_valid(invalid), "{invalid}");
        }
    }

    #[test]
    fn versions_are_ordered_as_semantic_versions() {
        assert_eq!(compare("v1.33.2", "v1.33.10"), Ordering::Less);
        assert_eq!(compare("1.34.0", "v1.33.10"), Ordering::Greater);
        assert_eq!(compare("v1.30.0-rc.1", "v1.30.0"), Ordering::Less);
        assert_eq!(compare("v1.30.0-rc.2", "v1.30.0-rc.10"), Ordering::Less);
        assert_eq!(compare("v1.30", "v1.30.0"), Ordering::Equal);
        assert_eq!(compare("latest", "v1.0.0"), Ordering::Less);
        assert_eq!(compare("junk", "other"), Ordering::Equal);
    }
}
