//! The names resource types accept, as Azure's naming rules document them, and how providers
//! refuse the others. Names are checked as the path (or, for child resources kept inside their
//! parent, the body) spells them: the emulator does not percent-decode paths, so a name that needs
//! escaping is refused for the escape's `%`.

use axum::http::StatusCode;

use crate::error::ArmError;

/// A naming rule: length in characters, the characters allowed anywhere, first and last.
#[derive(Debug)]
pub(crate) struct Naming {
    pub(crate) min: usize,
    pub(crate) max: usize,
    pub(crate) allowed: fn(char) -> bool,
    pub(crate) first: fn(char) -> bool,
    pub(crate) last: fn(char) -> bool,
    /// The rule in words, for messages.
    pub(crate) rule: &'static str,
    /// The provider's answer to a name that breaks the rule.
    pub(crate) refuse: fn(&Self, &str) -> ArmError,
}

impl Naming {
    /// Whether `name` follows the rule; the provider's 400 when it does not.
    pub(crate) fn check(&self, name: &str) -> Result<(), ArmError> {
        let length = name.chars().count();
        // `.` and `..` would be path steps to any client, not names.
        let valid = (self.min..=self.max).contains(&length)
            && !name.chars().all(|c| c == '.')
            && name.chars().all(self.allowed)
            && name.chars().next().is_some_and(self.first)
            && name.chars().last().is_some_and(self.last);
        if valid {
            Ok(())
        } else {
            Err((self.refuse)(self, name))
        }
    }
}

/// A letter or digit, in any script.
pub(crate) fn alphanumeric(c: char) -> bool {
    c.is_alphanumeric()
}

fn anything(_: char) -> bool {
    true
}

/// Names checked otherwise (role assignments and definitions must be GUIDs).
pub(crate) static ANY: Naming = Naming {
    min: 1,
    max: usize::MAX,
    allowed: anything,
    first: anything,
    last: anything,
    rule: "",
    refuse,
};

/// ARM's answer to a name the provider does not accept.
pub(crate) fn refuse(naming: &Naming, name: &str) -> ArmError {
    ArmError::new(
        StatusCode::BAD_REQUEST,
        "InvalidResourceName",
        format!("The resource name '{name}' is invalid. {}", naming.rule),
    )
}

/// A resource group name: up to 90 letters, digits, `-`, `.`, `(`, `)` and `_`, not ending with
/// a period, refused with ARM's `InvalidResourceGroup`.
pub(crate) fn check_resource_group(name: &str) -> Result<(), ArmError> {
    let allowed = |c: char| c.is_alphanumeric() || "-.()_".contains(c);
    let invalid: String = name.chars().filter(|c| !allowed(*c)).collect();
    let problem = if !invalid.is_empty() {
        format!(
            "has these invalid characters: '{invalid}'. The name can only be a letter, digit, '-', '.', '(', ')' or '_'."
        )
    } else if name.chars().count() > 90 {
        "is longer than 90 characters.".to_owned()
    } else if name.ends_with('.') {
        "ends with a period, which a resource group name may not.".to_owned()
    } else {
        return Ok(());
    };
    Err(ArmError::new(
        StatusCode::BAD_REQUEST,
        "InvalidResourceGroup",
        format!("The provided resource group name '{name}' {problem}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::{ANY, check_resource_group};

    #[test]
    fn resource_group_names_follow_arm_rules() {
        for good in ["fz", "My-RG_(1).x", "gruppe-äö", &"g".repeat(90)] {
            assert!(check_resource_group(good).is_ok(), "{good}");
        }
        for bad in ["a b", "a.", "a%2Fb", "a/b", "a\u{0}", &"g".repeat(91)] {
            let refused = check_resource_group(bad).unwrap_err();
            assert_eq!(refused.code, "InvalidResourceGroup", "{bad}");
            assert!(
                refused.message.contains(&format!("'{bad}'")),
                "{}",
                refused.message
            );
        }
    }

    #[test]
    fn any_name_passes_the_open_rule() {
        assert!(ANY.check("a/b").is_ok() && ANY.check("x").is_ok());
    }
}
