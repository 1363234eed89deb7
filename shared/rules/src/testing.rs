//! What the rules' unit tests share: deterministic randomness, contexts, JSON merge patches, and
//! the comparison of a verdict with the one error a case expects.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::{Context, Entropy, Features, Operation, Verdict};

/// The subscription of the test cluster's AzureCluster.
pub(crate) const SUBSCRIPTION: &str = "0a1b2c3d-0000-4000-8000-000000000001";
/// The GUID [`TestEntropy`] generates.
pub(crate) const GENERATED_NAME: &str = "5c0a3f1e-8d2b-4c6a-9e7f-1b2c3d4e5f60";
/// A GUID a user might choose.
pub(crate) const GUID: &str = "9f8e7d6c-5b4a-4321-8fed-cba987654321";

/// A fixed Ed25519 key line (all-7 key bytes), base64-encoded as the spec stores it.
pub(crate) fn test_key(fill: u8) -> String {
    let mut blob = Vec::new();
    for part in [b"ssh-ed25519".as_slice(), &[fill; 32]] {
        blob.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        blob.extend_from_slice(part);
    }
    STANDARD.encode(format!("ssh-ed25519 {} test@capz-rs", STANDARD.encode(blob)))
}

/// Deterministic randomness.
pub(crate) struct TestEntropy;

impl Entropy for TestEntropy {
    fn ssh_public_key(&self) -> Result<String, String> {
        Ok(test_key(7))
    }

    fn uuid(&self) -> String {
        GENERATED_NAME.to_owned()
    }
}

/// A random source that fails.
pub(crate) struct BrokenEntropy;

impl Entropy for BrokenEntropy {
    fn ssh_public_key(&self) -> Result<String, String> {
        Err("no entropy".to_owned())
    }

    fn uuid(&self) -> String {
        GENERATED_NAME.to_owned()
    }
}

/// A context for `operation` with [`TestEntropy`], knowing the cluster's subscription when given.
pub(crate) fn context(operation: Operation, dry_run: bool, subscription: Option<&str>) -> Context<'static> {
    Context {
        operation,
        dry_run,
        features: Features::default(),
        entropy: &TestEntropy,
        cluster_subscription_id: subscription.map(str::to_owned),
        machine_pool: crate::PoolOwner::NotLookedUp,
        cluster: crate::OwnerCluster::NotLookedUp,
    }
}

/// A real create of an object whose cluster is known.
pub(crate) fn create() -> Context<'static> {
    context(Operation::Create, false, Some(SUBSCRIPTION))
}

/// A dry-run create: nothing random is generated, so the checks of generated values rest.
pub(crate) fn dry_run() -> Context<'static> {
    context(Operation::Create, true, Some(SUBSCRIPTION))
}

/// A real update of an object whose cluster is known.
pub(crate) fn update() -> Context<'static> {
    context(Operation::Update, false, Some(SUBSCRIPTION))
}

/// `patch` merged into `base` as a JSON merge patch: null removes a field.
pub(crate) fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    base.remove(key);
                } else {
                    merge(base.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        (base, patch) => *base = patch.clone(),
    }
}

/// One rejected manifest: the patch applied to a valid spec, the path of the one error it
/// causes (relative to the spec) and words its message must hold.
pub(crate) struct Case {
    pub(crate) rule: &'static str,
    pub(crate) patch: &'static str,
    pub(crate) path: &'static str,
    pub(crate) message: &'static str,
}

/// Why `verdict` is not exactly one error at `path` holding `message`, if it is not.
pub(crate) fn mismatch(verdict: &Verdict, path: &str, message: &str) -> Option<String> {
    match verdict.errors.as_slice() {
        [only] if only.path.as_str() == path && only.to_string().contains(message) => None,
        errors => {
            let found: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Some(format!(
                "expected one error at {path} saying {message:?}, got {found:?}"
            ))
        }
    }
}

/// The cases that `verdict_of` does not decide as they expect, with `base` the spec's path.
pub(crate) fn failures(
    cases: &[Case],
    base: &str,
    verdict_of: impl Fn(&str) -> Result<Verdict, String>,
) -> Vec<String> {
    cases
        .iter()
        .filter_map(|case| {
            let path = if case.path.is_empty() {
                base.to_owned()
            } else {
                format!("{base}.{}", case.path)
            };
            let problem = match verdict_of(case.patch) {
                Ok(verdict) => mismatch(&verdict, &path, case.message)?,
                Err(err) => err,
            };
            Some(format!("{} ({base}): {problem}", case.rule))
        })
        .collect()
}

/// The valid manifests that `verdict_of` rejects.
pub(crate) fn rejected(
    cases: &[(&str, &str)],
    verdict_of: impl Fn(&str) -> Result<Verdict, String>,
) -> Vec<String> {
    cases
        .iter()
        .filter_map(|(rule, patch)| match verdict_of(patch) {
            Ok(verdict) if verdict.allowed() => None,
            Ok(verdict) => Some(format!("{rule}: {}", verdict.message("Object", "g", "o"))),
            Err(err) => Some(format!("{rule}: {err}")),
        })
        .collect()
}

/// The identity rules, the same for a machine (at its spec) and a pool (at `spec`): one case each.
pub(crate) const IDENTITY_INVALID: &[Case] = &[
    Case {
        rule: "41 user-assigned identities without that identity",
        patch: r#"{"userAssignedIdentities": [{"providerID": "/subscriptions/s"}]}"#,
        path: "userAssignedIdentities",
        message: "set that identity or remove the list",
    },
    Case {
        rule: "41 identity UserAssigned without identities",
        patch: r#"{"identity": "UserAssigned"}"#,
        path: "userAssignedIdentities",
        message: "at least one entry",
    },
    Case {
        rule: "41 identity that is no resource ID",
        patch: r#"{"identity": "UserAssigned", "userAssignedIdentities": [{"providerID": "my-identity"}]}"#,
        path: "userAssignedIdentities[0].providerID",
        message: "must start with",
    },
    Case {
        rule: "42 role without system-assigned identity",
        patch: r#"{"systemAssignedIdentityRole": {"scope": "/subscriptions/s/", "definitionID": "/d"}}"#,
        path: "systemAssignedIdentityRole",
        message: "set identity SystemAssigned",
    },
    Case {
        rule: "42 role without definition",
        patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/subscriptions/s/"}}"#,
        path: "systemAssignedIdentityRole.definitionID",
        message: "role definition's resource ID",
    },
    Case {
        rule: "42 role without scope",
        patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"definitionID": "/d"}}"#,
        path: "systemAssignedIdentityRole.scope",
        message: "scope of the role assignment",
    },
];
