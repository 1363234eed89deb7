//! `AzureClusterIdentity`: what each identity type needs to obtain a token, what it must not
//! carry, and that its type never changes.
//!
//! CAPZ itself forbids `resourceID` outside `UserAssignedMSI`, the credentials-file fields outside
//! `UserAssignedIdentityCredential`, and any change of `spec.type`; so do we. An identity that
//! lacks what its type reads (the client secret's Secret, a tenant) is admitted, as CAPZ admits
//! it, since it may be completed later, with a warning naming the field to set; values that could
//! never work (a malformed tenant, Secret name or namespace selector) are refused. Fields a type
//! does not read are admitted with a warning rather than silently ignored.
//!
//! Updates ratchet: an error the old object already had does not block a change (a finalizer
//! added by a controller, say), so identities stored before these checks stay manageable.

use capz_api::azureclusteridentity::{AzureClusterIdentity, AzureClusterIdentitySpec, IdentityType};
use capz_api::common::SecretReference;

use crate::field::{FieldError, FieldPath, Verdict};
use crate::immutable::unchanged;
use crate::meta::{dns1123_label_problem, dns1123_subdomain_problem, validate_label_selector};
use crate::{Context, Rules};

impl Rules for AzureClusterIdentity {
    /// An identity has no defaults.
    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        Ok(())
    }

    fn validate_create(&self, _ctx: &Context<'_>) -> Verdict {
        check(&self.spec)
    }

    fn validate_update(&self, old: &Self, _ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if let Some(mut error) = unchanged(
            spec().child("type"),
            Some(&old.spec.type_),
            Some(&self.spec.type_),
        ) {
            error.detail = format!(
                "{}; to authenticate as a {} identity, create a new AzureClusterIdentity and point the \
                 clusters' spec.identityRef at it",
                error.detail,
                type_name(self.spec.type_)
            );
            verdict.reject(error);
        }
        let before = check(&old.spec);
        let now = check(&self.spec);
        verdict.errors.extend(
            now.errors
                .into_iter()
                .filter(|error| !before.errors.contains(error)),
        );
        // A change of metadata alone (finalizers, labels) tells the user nothing new.
        if self.spec != old.spec {
            verdict.warnings.extend(now.warnings);
        }
        verdict
    }
}

fn spec() -> FieldPath {
    FieldPath::root("spec")
}

/// The type as written in manifests.
fn type_name(type_: IdentityType) -> &'static str {
    match type_ {
        IdentityType::ServicePrincipal => "ServicePrincipal",
        IdentityType::UserAssignedMsi => "UserAssignedMSI",
        IdentityType::ManualServicePrincipal => "ManualServicePrincipal",
        IdentityType::ServicePrincipalCertificate => "ServicePrincipalCertificate",
        IdentityType::WorkloadIdentity => "WorkloadIdentity",
        IdentityType::UserAssignedIdentityCredential => "UserAssignedIdentityCredential",
    }
}

fn is_set(value: Option<&String>) -> bool {
    value.is_some_and(|value| !value.is_empty())
}

/// Every check of a spec, on its own.
fn check(spec_: &AzureClusterIdentitySpec) -> Verdict {
    let mut verdict = Verdict::default();
    forbidden_for_type(spec_, &mut verdict);
    ids(spec_, &mut verdict);
    credentials(spec_, &mut verdict);
    managed_identities(spec_, &mut verdict);
    allowed_namespaces(spec_, &mut verdict);
    verdict
}

/// CAPZ's rules: the managed-identity resource ID and the credentials-file fields belong to one
/// type each.
fn forbidden_for_type(spec_: &AzureClusterIdentitySpec, verdict: &mut Verdict) {
    let type_ = type_name(spec_.type_);
    if spec_.type_ != IdentityType::UserAssignedMsi && is_set(spec_.resource_id.as_ref()) {
        verdict.reject(FieldError::forbidden(
            spec().child("resourceID"),
            format!("can only be set when spec.type is UserAssignedMSI; remove it (a {type_} identity is named by spec.clientID)"),
        ));
    }
    if spec_.type_ != IdentityType::UserAssignedIdentityCredential {
        for (field, value) in [
            (
                "userAssignedIdentityCredentialsPath",
                &spec_.user_assigned_identity_credentials_path,
            ),
            (
                "userAssignedIdentityCredentialsCloudType",
                &spec_.user_assigned_identity_credentials_cloud_type,
            ),
        ] {
            if is_set(value.as_ref()) {
                verdict.reject(FieldError::forbidden(
                    spec().child(field),
                    format!("can only be set when spec.type is UserAssignedIdentityCredential; remove it from this {type_} identity"),
                ));
            }
        }
    }
}

/// The client and tenant IDs each type signs in with.
fn ids(spec_: &AzureClusterIdentitySpec, verdict: &mut Verdict) {
    let client = spec().child("clientID");
    let tenant = spec().child("tenantID");
    let (needs_client, needs_tenant) = match spec_.type_ {
        IdentityType::ServicePrincipal
        | IdentityType::ManualServicePrincipal
        | IdentityType::ServicePrincipalCertificate => {
            (Some("the application (client) ID of the service principal"), true)
        }
        IdentityType::WorkloadIdentity => (
            Some(
                "the client ID of the application or managed identity the service account is federated with",
            ),
            true,
        ),
        // Either the client ID or the deprecated resource ID names the managed identity.
        IdentityType::UserAssignedMsi => {
            let named = is_set(spec_.resource_id.as_ref());
            (
                (!named).then_some("the client ID of the user-assigned managed identity"),
                false,
            )
        }
        // The credentials file names the identity.
        IdentityType::UserAssignedIdentityCredential => (None, false),
    };
    if let Some(what) = needs_client
        && spec_.client_id.trim().is_empty()
    {
        missing(
            verdict,
            &FieldError::required(client.clone(), format!("set it to {what}")),
        );
    }
    if needs_tenant && spec_.tenant_id.trim().is_empty() {
        missing(
            verdict,
            &FieldError::required(
                tenant.clone(),
                "set it to the ID of the Microsoft Entra tenant the identity belongs to",
            ),
        );
    }
    for (path, value) in [(client, &spec_.client_id), (tenant.clone(), &spec_.tenant_id)] {
        if !value.trim().is_empty() && value.trim() != value {
            verdict.reject(FieldError::invalid(
                path,
                value,
                "remove the leading or trailing white space",
            ));
        }
    }
    let tenant_id = spec_.tenant_id.trim();
    if !tenant_id.is_empty()
        && !tenant_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
    {
        verdict.reject(FieldError::invalid(
            tenant,
            &spec_.tenant_id,
            "a tenant is a GUID or a domain name such as contoso.onmicrosoft.com",
        ));
    }
}

/// Where each type's credential comes from: a Secret, a certificate file, a managed identity.
fn credentials(spec_: &AzureClusterIdentitySpec, verdict: &mut Verdict) {
    let type_ = type_name(spec_.type_);
    let secret = spec().child("clientSecret");
    let secret_named = spec_
        .client_secret
        .as_ref()
        .is_some_and(|secret| is_set(secret.name.as_ref()));
    let cert_path = is_set(spec_.cert_path.as_ref());
    match spec_.type_ {
        IdentityType::ServicePrincipal | IdentityType::ManualServicePrincipal => {
            if !secret_named {
                missing(
                    verdict,
                    &FieldError::required(
                        missing_secret_path(spec_.client_secret.as_ref()),
                        format!(
                            "a {type_} identity reads its client secret from a Secret (key clientSecret): \
                         set spec.clientSecret to {{name: <secret>, namespace: <namespace>}}"
                        ),
                    ),
                );
            }
        }
        IdentityType::ServicePrincipalCertificate => {
            if !secret_named && !cert_path {
                missing(
                    verdict,
                    &FieldError::required(
                        missing_secret_path(spec_.client_secret.as_ref()),
                        "a ServicePrincipalCertificate identity reads its certificate from a Secret (key \
                     certificate, PEM or PFX, with the PFX's password under password): set \
                     spec.clientSecret to {name: <secret>, namespace: <namespace>}, or set spec.certPath to a \
                     certificate file mounted into the controllers",
                    ),
                );
            }
            if cert_path && spec_.client_secret.is_some() {
                verdict.warn("spec.clientSecret is ignored: the certificate is read from spec.certPath");
            }
        }
        IdentityType::WorkloadIdentity
        | IdentityType::UserAssignedMsi
        | IdentityType::UserAssignedIdentityCredential => {
            if spec_.client_secret.is_some() {
                verdict.warn(format!(
                    "spec.clientSecret is ignored: a {type_} identity uses no Secret"
                ));
            }
        }
    }
    if cert_path && spec_.type_ != IdentityType::ServicePrincipalCertificate {
        verdict.warn(format!(
            "spec.certPath is ignored: it is read only for type ServicePrincipalCertificate, not {type_}"
        ));
    }
    if let Some(reference) = &spec_.client_secret {
        if let Some(name) = reference.name.as_ref().filter(|name| !name.is_empty())
            && let Some(problem) = dns1123_subdomain_problem(name)
        {
            verdict.reject(FieldError::invalid(
                secret.child("name"),
                name,
                format!("not a Secret name: {problem}"),
            ));
        }
        if let Some(namespace) = reference
            .namespace
            .as_ref()
            .filter(|namespace| !namespace.is_empty())
            && let Some(problem) = dns1123_label_problem(namespace)
        {
            verdict.reject(FieldError::invalid(
                secret.child("namespace"),
                namespace,
                format!("not a namespace name: {problem}"),
            ));
        }
    }
}

/// The managed-identity types: a resource ID of the right shape, a credentials file.
fn managed_identities(spec_: &AzureClusterIdentitySpec, verdict: &mut Verdict) {
    match spec_.type_ {
        IdentityType::UserAssignedMsi => {
            if let Some(id) = spec_.resource_id.as_ref().filter(|id| !id.is_empty()) {
                // CAPZ admits any value of this deprecated field; it is only used without a clientID.
                if !is_user_assigned_identity_id(id) {
                    verdict.warn(
                        FieldError::invalid(
                            spec().child("resourceID"),
                            id,
                            "is not the resource ID of a user-assigned identity, \
                         /subscriptions/<subscription>/resourceGroups/<group>/providers/\
                         Microsoft.ManagedIdentity/userAssignedIdentities/<name>",
                        )
                        .to_string(),
                    );
                }
                verdict.warn(if spec_.client_id.trim().is_empty() {
                    "spec.resourceID is deprecated: name the managed identity by its spec.clientID instead"
                } else {
                    "spec.resourceID is deprecated and ignored: spec.clientID names the managed identity"
                });
            }
        }
        // That capz-rs cannot use such an identity yet is the support matrix's warning.
        IdentityType::UserAssignedIdentityCredential
            if !is_set(spec_.user_assigned_identity_credentials_path.as_ref()) =>
        {
            missing(
                verdict,
                &FieldError::required(
                    spec().child("userAssignedIdentityCredentialsPath"),
                    "set it to the path of the credentials file mounted into the controllers",
                ),
            );
        }
        _ => {}
    }
}

/// What a type needs to sign in but the identity does not have yet: admitted with a warning, as
/// CAPZ admits it, since it may be set later (the Secret's reference after the Secret exists,
/// say); until then clusters using the identity report that they cannot sign in.
fn missing(verdict: &mut Verdict, error: &FieldError) {
    verdict.warn(format!(
        "{error}; clusters using this identity cannot sign in until it is set"
    ));
}

/// `spec.clientSecret.name` when the reference is there without a name, else `spec.clientSecret`.
fn missing_secret_path(reference: Option<&SecretReference>) -> FieldPath {
    match reference {
        Some(_) => spec().child("clientSecret").child("name"),
        None => spec().child("clientSecret"),
    }
}

/// Whether `id` has the shape of a user-assigned identity's resource ID (segment names compared
/// without regard to case, as ARM does).
fn is_user_assigned_identity_id(id: &str) -> bool {
    let segments: Vec<&str> = id.split('/').collect();
    let named = |index: usize, expected: &str| segments[index].eq_ignore_ascii_case(expected);
    segments.len() == 9
        && segments[0].is_empty()
        && named(1, "subscriptions")
        && named(3, "resourceGroups")
        && named(5, "providers")
        && named(6, "Microsoft.ManagedIdentity")
        && named(7, "userAssignedIdentities")
        && [2, 4, 8].iter().all(|&index| !segments[index].trim().is_empty())
}

/// `allowedNamespaces`: namespace names and a well-formed selector; a warning when absent, since
/// then no namespace at all may use the identity.
fn allowed_namespaces(spec_: &AzureClusterIdentitySpec, verdict: &mut Verdict) {
    let path = spec().child("allowedNamespaces");
    let Some(allowed) = &spec_.allowed_namespaces else {
        verdict.warn(
            "spec.allowedNamespaces is not set, so no namespace may use this identity, not even its own: \
             set it to {} to allow every namespace, or list the namespaces under allowedNamespaces.list",
        );
        return;
    };
    for (index, namespace) in allowed.list.iter().flatten().enumerate() {
        if let Some(problem) = dns1123_label_problem(namespace) {
            verdict.reject(FieldError::invalid(
                path.child("list").index(index),
                namespace,
                format!("not a namespace name: {problem}"),
            ));
        }
    }
    if let Some(selector) = &allowed.selector {
        for error in validate_label_selector(selector, &path.child("selector")) {
            verdict.reject(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{Features, Operation, SystemEntropy};

    fn context(operation: Operation) -> Context<'static> {
        Context {
            operation,
            dry_run: false,
            features: Features::default(),
            entropy: &SystemEntropy,
            cluster_subscription_id: None,
            machine_pool: crate::PoolOwner::NotLookedUp,
            cluster: crate::OwnerCluster::NotLookedUp,
        }
    }

    /// An identity of `type_` with `spec` merged over the fields every type has.
    fn identity(type_: &str, spec_: &Value) -> AzureClusterIdentity {
        let mut full = json!({
            "type": type_,
            "clientID": "5b0bcf4b-5a41-4ef7-8b5e-5e3f7a8c9d10",
            "tenantID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "allowedNamespaces": {},
        });
        for (key, value) in spec_.as_object().into_iter().flatten() {
            full[key] = value.clone();
        }
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterIdentity",
            "metadata": {"name": "identity", "namespace": "default"},
            "spec": full,
        }))
        .unwrap()
    }

    fn secret() -> Value {
        json!({"name": "cluster-identity-secret", "namespace": "default"})
    }

    #[test]
    fn valid_identities_are_admitted_without_errors() {
        let cases = [
            ("ServicePrincipal", json!({"clientSecret": secret()})),
            ("ManualServicePrincipal", json!({"clientSecret": {"name": "s"}})),
            ("ServicePrincipalCertificate", json!({"clientSecret": secret()})),
            (
                "ServicePrincipalCertificate",
                json!({"certPath": "/etc/capz/cert.pem"}),
            ),
            ("WorkloadIdentity", json!({})),
            ("UserAssignedMSI", json!({})),
            (
                "UserAssignedMSI",
                json!({"clientID": "", "tenantID": "", "resourceID":
                "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"}),
            ),
            (
                "WorkloadIdentity",
                json!({"tenantID": "contoso.onmicrosoft.com", "allowedNamespaces": {
                    "list": ["default", "team-a"],
                    "selector": {"matchLabels": {"example.com/team": "a"},
                                 "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
                }}),
            ),
            (
                "UserAssignedIdentityCredential",
                json!({"clientID": "", "tenantID": "",
                "userAssignedIdentityCredentialsPath": "/var/run/creds.json",
                "userAssignedIdentityCredentialsCloudType": "public"}),
            ),
        ];
        for (type_, spec_) in cases {
            let verdict = identity(type_, &spec_).validate_create(&context(Operation::Create));
            assert!(verdict.allowed(), "{type_} {spec_}: {:?}", verdict.errors);
        }
    }

    /// Checks that each identity is refused for exactly one field, with the message's head and fix.
    fn refused(cases: &[(&str, Value, &str, &str)]) {
        for (type_, spec_, head, fix) in cases {
            let verdict = identity(type_, spec_).validate_create(&context(Operation::Create));
            let errors: Vec<String> = verdict.errors.iter().map(ToString::to_string).collect();
            assert_eq!(errors.len(), 1, "{type_} {spec_}: {errors:#?}");
            assert!(
                errors[0].starts_with(head),
                "{type_} {spec_}: {} does not start with {head}",
                errors[0]
            );
            assert!(
                errors[0].contains(fix),
                "{type_} {spec_}: {} does not say {fix}",
                errors[0]
            );
        }
    }

    /// CAPZ admits an identity its clusters cannot sign in with yet; so do we, saying what to set.
    #[test]
    fn missing_credentials_are_admitted_with_the_field_and_the_fix() {
        let cases = [
            (
                "ServicePrincipal",
                json!({}),
                "spec.clientSecret: Required value",
                "set spec.clientSecret to {name: <secret>",
            ),
            (
                "ManualServicePrincipal",
                json!({"clientSecret": {"namespace": "default"}}),
                "spec.clientSecret.name: Required value",
                "key clientSecret",
            ),
            (
                "ServicePrincipalCertificate",
                json!({}),
                "spec.clientSecret: Required value",
                "or set spec.certPath",
            ),
            (
                "ServicePrincipal",
                json!({"clientSecret": secret(), "clientID": ""}),
                "spec.clientID: Required value",
                "application (client) ID",
            ),
            (
                "WorkloadIdentity",
                json!({"tenantID": " "}),
                "spec.tenantID: Required value",
                "Microsoft Entra tenant",
            ),
            (
                "WorkloadIdentity",
                json!({"clientID": ""}),
                "spec.clientID: Required value",
                "federated",
            ),
            (
                "UserAssignedMSI",
                json!({"clientID": ""}),
                "spec.clientID: Required value",
                "user-assigned managed identity",
            ),
            (
                "UserAssignedIdentityCredential",
                json!({}),
                "spec.userAssignedIdentityCredentialsPath: Required value",
                "credentials file",
            ),
        ];
        for (type_, spec_, head, fix) in cases {
            let verdict = identity(type_, &spec_).validate_create(&context(Operation::Create));
            assert!(verdict.allowed(), "{type_} {spec_}: {:?}", verdict.errors);
            let warning = verdict.warnings.iter().find(|text| text.starts_with(head));
            assert!(
                warning.is_some_and(|text| text.contains(fix) && text.contains("cannot sign in until it is set")),
                "{type_} {spec_}: {:?}",
                verdict.warnings
            );
        }
    }

    #[test]
    fn values_that_could_never_work_name_the_field_and_the_fix() {
        let cases = [
            (
                "WorkloadIdentity",
                json!({"tenantID": "72f988bf/x"}),
                "spec.tenantID: Invalid value: \"72f988bf/x\"",
                "a GUID or a domain name",
            ),
            (
                "WorkloadIdentity",
                json!({"clientID": "abc\n"}),
                "spec.clientID: Invalid value: \"abc\\n\"",
                "remove the leading or trailing white space",
            ),
        ];
        refused(&cases);
        // CAPZ admits any resource ID on a managed identity; a malformed one is only warned about.
        let odd = identity("UserAssignedMSI", &json!({"resourceID": "fake-resource-id"}));
        let verdict = odd.validate_create(&context(Operation::Create));
        assert!(verdict.allowed(), "{:?}", verdict.errors);
        assert!(
            verdict
                .warnings
                .iter()
                .any(|text| text.starts_with("spec.resourceID: Invalid value")),
            "{:?}",
            verdict.warnings
        );
    }

    #[test]
    fn forbidden_fields_and_bad_names_name_the_field_and_the_fix() {
        let cases = [
            (
                "ServicePrincipal",
                json!({"clientSecret": secret(), "resourceID": "/subscriptions/s"}),
                "spec.resourceID: Forbidden",
                "can only be set when spec.type is UserAssignedMSI",
            ),
            (
                "WorkloadIdentity",
                json!({"userAssignedIdentityCredentialsPath": "/creds"}),
                "spec.userAssignedIdentityCredentialsPath: Forbidden",
                "UserAssignedIdentityCredential",
            ),
            (
                "UserAssignedMSI",
                json!({"userAssignedIdentityCredentialsCloudType": "public"}),
                "spec.userAssignedIdentityCredentialsCloudType: Forbidden",
                "remove it",
            ),
            (
                "ServicePrincipal",
                json!({"clientSecret": {"name": "Bad_Name"}}),
                "spec.clientSecret.name: Invalid value: \"Bad_Name\"",
                "not a Secret name",
            ),
            (
                "ServicePrincipal",
                json!({"clientSecret": {"name": "s", "namespace": "a.b"}}),
                "spec.clientSecret.namespace: Invalid value: \"a.b\"",
                "not a namespace name",
            ),
            (
                "WorkloadIdentity",
                json!({"allowedNamespaces": {"list": ["default", "Team A"]}}),
                "spec.allowedNamespaces.list[1]: Invalid value: \"Team A\"",
                "RFC 1123 label",
            ),
            (
                "WorkloadIdentity",
                json!({"allowedNamespaces": {"selector": {"matchExpressions": [
                {"key": "team", "operator": "In"}]}}}),
                "spec.allowedNamespaces.selector.matchExpressions[0].values: Required value",
                "'In' or 'NotIn'",
            ),
            (
                "WorkloadIdentity",
                json!({"allowedNamespaces": {"selector": {"matchLabels": {"team": "a b"}}}}),
                "spec.allowedNamespaces.selector.matchLabels[team]: Invalid value: \"a b\"",
                "valid label",
            ),
        ];
        refused(&cases);
    }

    #[test]
    fn fields_a_type_does_not_read_are_warned_about() {
        let cases = [
            (
                "WorkloadIdentity",
                json!({"clientSecret": secret()}),
                "spec.clientSecret is ignored",
            ),
            (
                "UserAssignedMSI",
                json!({"certPath": "/cert.pem"}),
                "spec.certPath is ignored",
            ),
            (
                "ServicePrincipalCertificate",
                json!({"certPath": "/c.pem", "clientSecret": secret()}),
                "read from spec.certPath",
            ),
            (
                "UserAssignedMSI",
                json!({"resourceID":
                "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"}),
                "deprecated and ignored",
            ),
            (
                "WorkloadIdentity",
                json!({"allowedNamespaces": null}),
                "no namespace may use this identity",
            ),
        ];
        for (type_, spec_, warning) in cases {
            let verdict = identity(type_, &spec_).validate_create(&context(Operation::Create));
            assert!(verdict.allowed(), "{type_} {spec_}: {:?}", verdict.errors);
            assert!(
                verdict.warnings.iter().any(|text| text.contains(warning)),
                "{type_} {spec_}: {:?} lacks {warning}",
                verdict.warnings
            );
        }
        let quiet = identity("ServicePrincipal", &json!({"clientSecret": secret()}));
        assert!(
            quiet
                .validate_create(&context(Operation::Create))
                .warnings
                .is_empty()
        );
    }

    #[test]
    fn the_type_is_immutable() {
        let old = identity("ServicePrincipal", &json!({"clientSecret": secret()}));
        let new = identity("ManualServicePrincipal", &json!({"clientSecret": secret()}));
        let verdict = new.validate_update(&old, &context(Operation::Update));
        let errors: Vec<String> = verdict.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .starts_with(r#"spec.type: Invalid value: "ManualServicePrincipal": field is immutable"#),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].contains("create a new AzureClusterIdentity"),
            "{}",
            errors[0]
        );

        let mut changed = old.clone();
        changed.spec.client_id = "00000000-0000-0000-0000-000000000001".to_owned();
        assert!(
            changed
                .validate_update(&old, &context(Operation::Update))
                .allowed()
        );
    }

    #[test]
    fn updates_ratchet_errors_the_old_object_had() {
        // Stored before the checks existed: a tenant that is neither a GUID nor a domain.
        let old = identity("WorkloadIdentity", &json!({"tenantID": "72f988bf/x"}));
        let mut finalized = old.clone();
        finalized.metadata.finalizers = Some(vec!["identity.infrastructure.cluster.x-k8s.io".into()]);
        let verdict = finalized.validate_update(&old, &context(Operation::Update));
        assert!(verdict.allowed(), "{:?}", verdict.errors);

        // A new error is refused even when an old one stays.
        let mut worse = old.clone();
        worse.spec.client_id = " padded".to_owned();
        let verdict = worse.validate_update(&old, &context(Operation::Update));
        let errors: Vec<String> = verdict.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("spec.clientID: Invalid value"),
            "{}",
            errors[0]
        );

        // Warnings come only with a change of the spec.
        let unlisted = identity("WorkloadIdentity", &json!({"allowedNamespaces": null}));
        let mut labelled = unlisted.clone();
        labelled.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
        assert!(
            labelled
                .validate_update(&unlisted, &context(Operation::Update))
                .warnings
                .is_empty()
        );
    }

    #[test]
    fn defaulting_changes_nothing() {
        let original = identity("WorkloadIdentity", &json!({}));
        let mut defaulted = original.clone();
        defaulted.default(&context(Operation::Create)).unwrap();
        assert_eq!(defaulted.spec, original.spec);
        assert_eq!(defaulted.metadata, original.metadata);
    }
}
