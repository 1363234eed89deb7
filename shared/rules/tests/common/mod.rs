//! What several of the crate's tests share: rendering manifests as clusterctl does.

/// `text` rendered as clusterctl renders a template: `${NAME}` takes the variable's `value`, and
/// `${NAME:=default}` (also `:-`, `=`, `-`) its default when it has none, which may hold
/// references itself. A variable without a default and without a value is an error; a `$` that
/// starts no reference is kept.
pub(crate) fn render(text: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let Some(reference) = rest[start..].strip_prefix("${") else {
            // Not a reference: kept as it is.
            out.push('$');
            rest = &rest[start + 1..];
            continue;
        };
        let name_len = reference
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(|| format!("unclosed variable in {reference:?}"))?;
        let name = &reference[..name_len];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("not a variable name in ${{{reference}"));
        }
        let after = &reference[name_len..];
        let (default, consumed) = if after.starts_with('}') {
            (None, 1)
        } else {
            let operator = [":=", ":-", "=", "-"]
                .into_iter()
                .find(|op| after.starts_with(op))
                .ok_or_else(|| format!("${{{name} is followed by {after:.10?}"))?;
            let body = &after[operator.len()..];
            let end = closing_brace(body).ok_or_else(|| format!("unclosed default of ${{{name}"))?;
            (Some(&body[..end]), operator.len() + end + 1)
        };
        match (value(name), default) {
            (Some(given), _) => out.push_str(&given),
            (None, Some(default)) => out.push_str(&render(default, value)?),
            (None, None) => {
                return Err(format!("no value for the required variable {name}"));
            }
        }
        rest = &reference[name_len + consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Where the `}` closing a default that starts `text` is, past any `${...}` inside it.
fn closing_brace(text: &str) -> Option<usize> {
    let mut depth = 0_usize;
    let bytes = text.as_bytes();
    for (i, byte) in bytes.iter().enumerate() {
        match byte {
            b'{' if i > 0 && bytes[i - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
    }
    None
}
