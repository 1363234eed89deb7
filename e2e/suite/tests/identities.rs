//! Every way an AzureClusterIdentity signs in, end to end: a cluster per identity type converges
//! (the network and load-balancer controllers reach ARM as that identity), and the identity
//! controller reports the identity Ready. The controllers run under their own ServiceAccounts, so
//! the workload identity case also proves the RBAC that lets them request `capz-manager` tokens:
//! the emulator verifies those tokens against the plane's own issuer, as Entra ID does a cluster's.
//!
//! The service principal with a client secret is the default flavor's (tests/default_flavor.rs).

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{
    DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT, FederatedCredential,
    ManagedIdentity, Principal,
};
use capz_e2e::{Environment, TestResult, cluster_manifest, condition, rbac_trusting, wait_list};
use capz_harness::Plane;
use kube::api::DynamicObject;

const CONVERGE: Duration = Duration::from_mins(2);
/// A certificate and its key, the key signing the client assertions.
const CERTIFICATE_AND_KEY: &str = include_str!("../../../shared/azure/tests/fixtures/client-certificate.pem");
const CERTIFICATE_CLIENT: &str = "22222222-2222-2222-2222-222222222222";
const WORKLOAD_CLIENT: &str = "33333333-3333-3333-3333-333333333333";
const MANAGED_IDENTITY_CLIENT: &str = "55555555-5555-5555-5555-555555555555";

fn principal(client_id: &str) -> Principal {
    Principal {
        client_id: client_id.to_owned(),
        tenant: DEFAULT_TENANT.to_owned(),
        object_id: None,
        secret: None,
        certificate: None,
        federated: Vec::new(),
    }
}

/// The principals each case signs in as: a certificate, a federation trusting the plane's
/// `capz-manager`, and a user-assigned managed identity.
fn azure(plane: &Plane) -> Config {
    let certificate = CERTIFICATE_AND_KEY
        .split_inclusive("-----END CERTIFICATE-----\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut config = Config {
        retry_after_seconds: 1,
        ..Config::default()
    };
    config.principals.push(Principal {
        certificate: Some(certificate),
        ..principal(CERTIFICATE_CLIENT)
    });
    config.principals.push(Principal {
        federated: vec![FederatedCredential {
            issuer: plane.url().to_owned(),
            subject: "system:serviceaccount:capz-system:capz-manager".to_owned(),
            audience: capz_harness::AZURE_AUDIENCE.to_owned(),
            jwks: None,
            ca: std::fs::read_to_string(plane.ca_file()).ok(),
        }],
        ..principal(WORKLOAD_CLIENT)
    });
    config.managed_identities.push(ManagedIdentity {
        client_id: MANAGED_IDENTITY_CLIENT.to_owned(),
        object_id: None,
        resource_id: Some(format!(
            "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/identities/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"
        )),
        tenant: DEFAULT_TENANT.to_owned(),
    });
    config
}

/// A cluster called `name` signing in with an identity of `identity_spec`, and the Secret that
/// identity reads (when it reads one).
fn manifest(name: &str, namespace: &str, identity_spec: &str, secret: Option<(&str, &str)>) -> String {
    let secret = secret.map_or_else(String::new, |(key, value)| {
        let indented = value.replace('\n', "\n    ");
        format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}-secret\nstringData:\n  {key}: |\n    {indented}\n"
        )
    });
    format!(
        r"{cluster}---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata:
  name: {name}
spec:
  allowedNamespaces: {{}}
  tenantID: {DEFAULT_TENANT}
  {identity_spec}
{secret}",
        cluster = cluster_manifest(name, name),
        identity_spec = identity_spec.replace("{namespace}", namespace),
    )
}

#[tokio::test]
async fn every_identity_type_signs_in_under_the_controllers_own_service_accounts() -> TestResult {
    let environment = Environment::start_with(azure).await?;
    let client = environment.client.clone();
    let secret_ref = |name: &str| format!("clientSecret: {{name: {name}-secret, namespace: {{namespace}}}}");
    let cases = [
        (
            "certificate",
            format!(
                "type: ServicePrincipalCertificate\n  clientID: {CERTIFICATE_CLIENT}\n  {}",
                secret_ref("certificate")
            ),
            Some(("certificate", CERTIFICATE_AND_KEY)),
        ),
        (
            "manual",
            format!(
                "type: ManualServicePrincipal\n  clientID: {DEFAULT_CLIENT_ID}\n  {}",
                secret_ref("manual")
            ),
            Some(("clientSecret", DEFAULT_CLIENT_SECRET)),
        ),
        (
            "msi",
            format!("type: UserAssignedMSI\n  clientID: {MANAGED_IDENTITY_CLIENT}"),
            None,
        ),
        (
            "workload",
            format!("type: WorkloadIdentity\n  clientID: {WORKLOAD_CLIENT}"),
            None,
        ),
    ];
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        for (name, spec, secret) in &cases {
            capz_harness::apply_yaml(&client, &namespace, &manifest(name, &namespace, spec, *secret)).await?;
        }
        let clusters = environment.infrastructure("AzureCluster", &namespace).await?;
        let identities = environment
            .infrastructure("AzureClusterIdentity", &namespace)
            .await?;
        for (name, _, _) in &cases {
            let one = |all: &[DynamicObject], ready: fn(&DynamicObject) -> bool| {
                all.iter()
                    .any(|object| object.metadata.name.as_deref() == Some(*name) && ready(object))
            };
            wait_list(
                &identities,
                "",
                &format!("AzureClusterIdentity {name} Ready"),
                CONVERGE,
                |all| {
                    one(all, |identity| {
                        condition(identity, "Ready").is_some_and(|(status, _)| status == "True")
                    })
                },
            )
            .await?;
            wait_list(
                &clusters,
                "",
                &format!("AzureCluster {name} Ready"),
                CONVERGE,
                |all| one(all, |cluster| cluster.data["status"]["ready"] == true),
            )
            .await?;
        }
        // Each cluster's resources were made by ARM calls under its own identity: its group exists.
        // The federation trusts only `capz-manager`, whose tokens nothing but the controllers'
        // own TokenRequests produces (the harness requests tokens of their ServiceAccounts).
        let created = environment.created_in_azure();
        for (name, _, _) in &cases {
            let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourcegroups/{name}");
            assert!(created.contains(&group), "no resource group {name}: {created:?}");
        }
        Ok(())
    })
    .await?
}

/// CAPZ's workload identity setup done through ARM, as its book does it with `az`: a user-assigned
/// identity, a federated credential trusting the management cluster's issuer for `capz-manager`,
/// and a role for the identity. The emulator trusts the plane's issuer as the sandbox's does (its
/// CA among `issuerCas`), enforces RBAC, and knows no principal for the identity: it signs in
/// only through what ARM made.
#[tokio::test]
async fn an_identity_made_through_arm_signs_the_controllers_in() -> TestResult {
    let environment = Environment::start_with(|plane| rbac_trusting(&[plane])).await?;
    let client_id = environment.workload_identity_through_arm().await?;
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let spec = format!("type: WorkloadIdentity\n  clientID: {client_id}");
        capz_harness::apply_yaml(
            &client,
            &namespace,
            &manifest("arm-identity", &namespace, &spec, None),
        )
        .await?;
        let identities = environment
            .infrastructure("AzureClusterIdentity", &namespace)
            .await?;
        wait_list(
            &identities,
            "",
            "AzureClusterIdentity arm-identity Ready",
            CONVERGE,
            |all| {
                all.iter()
                    .any(|identity| condition(identity, "Ready").is_some_and(|(status, _)| status == "True"))
            },
        )
        .await?;
        let clusters = environment.infrastructure("AzureCluster", &namespace).await?;
        wait_list(
            &clusters,
            "",
            "AzureCluster arm-identity Ready",
            CONVERGE,
            |all| all.iter().any(|cluster| cluster.data["status"]["ready"] == true),
        )
        .await?;
        // The identity made the cluster's group: nothing else could sign in for it.
        let created = environment.created_in_azure();
        let made_group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourcegroups/arm-identity");
        assert!(
            created.contains(&made_group),
            "no resource group arm-identity: {created:?}"
        );
        Ok(())
    })
    .await?
}
