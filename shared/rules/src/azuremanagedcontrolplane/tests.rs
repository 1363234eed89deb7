//! The rules of AzureManagedControlPlane and its template, one case per CAPZ rule.

use serde_json::json;

use super::*;
use crate::testing::{Case, context, create, dry_run, failures, merge, rejected, test_key, update};
use crate::{ClusterFacts, OwnerCluster};

/// A control plane of cluster `c1` with `patch` (JSON text, onto `spec`) merged in.
fn plane(patch: &str) -> Result<AzureManagedControlPlane, String> {
    let mut spec = json!({
        "version": "v1.33.2",
        "location": "westeurope",
        "resourceGroupName": "rg",
        "identityRef": {"name": "identity", "kind": "AzureClusterIdentity"},
    });
    merge(
        &mut spec,
        &serde_json::from_str(patch).map_err(|err| format!("{patch}: {err}"))?,
    );
    serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureManagedControlPlane",
        "metadata": {"name": "aks1", "namespace": "default", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
        "spec": spec,
    }))
    .map_err(|err| format!("{patch}: {err}"))
}

fn with_cluster(ctx: Context<'static>, services: &[&str]) -> Context<'static> {
    Context {
        cluster: OwnerCluster::Found(ClusterFacts {
            service_cidrs: services.iter().map(|s| (*s).to_owned()).collect(),
            ..ClusterFacts::default()
        }),
        ..ctx
    }
}

const VALID: &[(&str, &str)] = &[
    ("minimal", "{}"),
    ("pre-release version", r#"{"version": "v1.34.0-rc.1"}"#),
    (
        "one outbound kind",
        r#"{"loadBalancerProfile": {"managedOutboundIPs": 100, "idleTimeoutInMinutes": 4}}"#,
    ),
    (
        "cilium everywhere",
        r#"{"networkPluginMode": "overlay", "networkPolicy": "cilium", "networkDataplane": "cilium"}"#,
    ),
    (
        "authorized ranges",
        r#"{"apiServerAccessProfile": {"authorizedIPRanges": ["1.2.3.4/32", "10.0.0.0/8"]}}"#,
    ),
    (
        "private zone",
        r#"{"apiServerAccessProfile": {"enablePrivateCluster": true, "privateDNSZone": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/privateDnsZones/privatelink.westeurope.azmk8s.io"}}"#,
    ),
    (
        "local accounts off with AAD",
        r#"{"aadProfile": {"managed": true, "adminGroupObjectIDs": ["g"]}, "disableLocalAccounts": true}"#,
    ),
    (
        "user-assigned identity",
        r#"{"identity": {"type": "UserAssigned", "userAssignedIdentityResourceID": "/subscriptions/s/id"}}"#,
    ),
    (
        "autoscaler values",
        r#"{"autoscalerProfile": {"newPodScaleUpDelay": "30s", "scanInterval": "20s", "scaleDownUtilizationThreshold": "0.7", "maxTotalUnreadyPercentage": "100"}}"#,
    ),
    (
        "workload identity with OIDC",
        r#"{"oidcIssuerProfile": {"enabled": true}, "securityProfile": {"workloadIdentity": {"enabled": true}}}"#,
    ),
];

const INVALID: &[Case] = &[
    Case {
        rule: "validateVersion",
        patch: r#"{"version": "1.33.2"}"#,
        path: "version",
        message: "semantic version",
    },
    Case {
        rule: "validateLoadBalancerProfile bounds",
        patch: r#"{"loadBalancerProfile": {"managedOutboundIPs": 0}}"#,
        path: "loadBalancerProfile.managedOutboundIPs",
        message: "between 1 and 100",
    },
    Case {
        rule: "validateLoadBalancerProfile ports",
        patch: r#"{"loadBalancerProfile": {"allocatedOutboundPorts": 64001}}"#,
        path: "loadBalancerProfile.allocatedOutboundPorts",
        message: "between 0 and 64000",
    },
    Case {
        rule: "validateLoadBalancerProfile idle",
        patch: r#"{"loadBalancerProfile": {"idleTimeoutInMinutes": 121}}"#,
        path: "loadBalancerProfile.idleTimeoutInMinutes",
        message: "between 4 and 120",
    },
    Case {
        rule: "validateLoadBalancerProfile one kind",
        patch: r#"{"loadBalancerProfile": {"managedOutboundIPs": 2, "outboundIPs": ["/ip"]}}"#,
        path: "loadBalancerProfile",
        message: "at most one",
    },
    Case {
        rule: "validateAutoScalerProfile",
        patch: r#"{"autoscalerProfile": {"newPodScaleUpDelay": "soon"}}"#,
        path: "autoscalerProfile.newPodScaleUpDelay",
        message: "invalid value",
    },
    Case {
        rule: "validateAutoScalerProfile threshold",
        patch: r#"{"autoscalerProfile": {"scaleDownUtilizationThreshold": "1.5"}}"#,
        path: "autoscalerProfile.scaleDownUtilizationThreshold",
        message: "invalid value",
    },
    Case {
        rule: "validateAKSExtensions version",
        patch: r#"{"extensions": [{"name": "flux", "extensionType": "microsoft.flux", "version": "1.0"}]}"#,
        path: "extensions[0].version",
        message: "AutoUpgradeMinorVersion is true",
    },
    Case {
        rule: "validateAKSExtensions scope",
        patch: r#"{"extensions": [{"name": "flux", "extensionType": "microsoft.flux", "scope": {"scopeType": "Cluster"}}]}"#,
        path: "extensions[0].scope.releaseNamespace",
        message: "must be provided",
    },
    Case {
        rule: "validateAzureKeyVaultKms",
        patch: r#"{"securityProfile": {"azureKeyVaultKms": {"enabled": true, "keyID": "k"}}}"#,
        path: "securityProfile.azureKeyVaultKms.keyVaultResourceID",
        message: "UserAssigned",
    },
    Case {
        rule: "validateWorkloadIdentity",
        patch: r#"{"securityProfile": {"workloadIdentity": {"enabled": true}}}"#,
        path: "securityProfile.workloadIdentity",
        message: "OIDCIssuerProfile is disabled",
    },
    Case {
        rule: "validateNetworkPolicy",
        patch: r#"{"networkPluginMode": "overlay", "networkPolicy": "cilium", "networkDataplane": "azure"}"#,
        path: "networkPolicy",
        message: "cilium network dataplane",
    },
    Case {
        rule: "validateNetworkDataplane overlay",
        patch: r#"{"networkPolicy": "cilium", "networkDataplane": "cilium"}"#,
        path: "networkDataplane",
        message: "overlay",
    },
    Case {
        rule: "validateAPIServerAccessProfile ranges",
        patch: r#"{"apiServerAccessProfile": {"authorizedIPRanges": ["1.2.3.4"]}}"#,
        path: "apiServerAccessProfile.authorizedIPRanges[0]",
        message: "CIDR",
    },
    Case {
        rule: "validateAPIServerAccessProfile zone needs private",
        patch: r#"{"apiServerAccessProfile": {"privateDNSZone": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/privateDnsZones/private.westeurope.azmk8s.io"}}"#,
        path: "apiServerAccessProfile.enablePrivateCluster",
        message: "Private Cluster should be enabled",
    },
    Case {
        rule: "validateAPIServerAccessProfile zone name",
        patch: r#"{"apiServerAccessProfile": {"enablePrivateCluster": true, "privateDNSZone": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/privateDnsZones/example.com"}}"#,
        path: "apiServerAccessProfile.privateDNSZone",
        message: "invalid privateDnsZone",
    },
    Case {
        rule: "validateAMCPVirtualNetwork",
        patch: r#"{"virtualNetwork": {"name": "n", "cidrBlock": "10.0.0.0/16", "subnet": {"name": "s", "cidrBlock": "10.1.0.0/24"}}}"#,
        path: "virtualNetwork.cidrBlock",
        message: "should contain the subnet",
    },
    Case {
        rule: "validateSSHKey",
        patch: r#"{"sshPublicKey": "bm90IGEga2V5"}"#,
        path: "sshPublicKey",
        message: "Invalid value",
    },
    Case {
        rule: "validateIdentity",
        patch: r#"{"identity": {"type": "UserAssigned"}}"#,
        path: "identity.userAssignedIdentityResourceID",
        message: "cannot be empty",
    },
    Case {
        rule: "validateIdentity system",
        patch: r#"{"identity": {"type": "SystemAssigned", "userAssignedIdentityResourceID": "/id"}}"#,
        path: "identity.userAssignedIdentityResourceID",
        message: "should be empty",
    },
    Case {
        rule: "validateNetworkPluginMode",
        patch: r#"{"networkPlugin": "kubenet", "networkPluginMode": "overlay"}"#,
        path: "networkPluginMode",
        message: "kubenet",
    },
    Case {
        rule: "validateDNSPrefix",
        patch: r#"{"dnsPrefix": "-bad"}"#,
        path: "dnsPrefix",
        message: "DNSPrefix is invalid",
    },
    Case {
        rule: "validateDisableLocalAccounts",
        patch: r#"{"disableLocalAccounts": true}"#,
        path: "disableLocalAccounts",
        message: "AAD enabled",
    },
    Case {
        rule: "validateFleetsMember",
        patch: r#"{"fleetsMember": {"name": "Bad", "managerName": "m", "managerResourceGroup": "g"}}"#,
        path: "fleetsMember.name",
        message: "must match",
    },
];

#[test]
fn capz_admits_what_capz_admits_and_refuses_each_rule_at_its_field() {
    let verdict_of = |patch: &str| Ok(plane(patch)?.validate_create(&dry_run()));
    let mut problems = rejected(VALID, verdict_of);
    problems.extend(failures(INVALID, "spec", verdict_of));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn names_with_microsoft_or_windows_are_refused() {
    let mut plane = plane("{}").unwrap();
    plane.metadata.name = Some("my-Windows-cluster".to_owned());
    let verdict = plane.validate_create(&dry_run());
    assert_eq!(verdict.errors[0].path.as_str(), "metadata.name");
}

#[test]
fn defaults_fill_in_what_capz_fills_in() {
    let mut plane = plane(r#"{"version": "1.33.2", "resourceGroupName": "", "sku": {"tier": "Paid"}, "sshPublicKey": "", "fleetsMember": {"managerName": "m", "managerResourceGroup": "g"}, "extensions": [{"name": "x", "extensionType": "t", "plan": {"product": "p"}}]}"#).unwrap();
    plane.default(&create()).unwrap();
    let spec = &plane.spec;
    assert_eq!(spec.class.version, "v1.33.2");
    assert_eq!(spec.class.resource_group_name, "c1");
    assert_eq!(
        spec.node_resource_group_name.as_deref(),
        Some("MC_c1_aks1_westeurope")
    );
    assert_eq!(
        serde_json::to_value(&spec.class.sku).unwrap(),
        json!({"tier": "Standard"})
    );
    assert_eq!(spec.ssh_public_key, Some(test_key(7)));
    assert_eq!(spec.dns_prefix.as_deref(), Some("aks1"));
    assert_eq!(
        spec.class.oidc_issuer_profile,
        Some(capz_api::azuremanagedcontrolplane::OidcIssuerProfile::default())
    );
    assert_eq!(spec.fleets_member.as_ref().unwrap().name.as_deref(), Some("c1"));
    let plan = spec.class.extensions.as_ref().unwrap()[0].plan.as_ref().unwrap();
    assert_eq!(plan.name.as_deref(), Some("aks1-p"));
    assert_eq!(
        serde_json::to_value(&spec.class.virtual_network).unwrap(),
        json!({"name": "aks1", "cidrBlock": "10.0.0.0/8", "resourceGroup": "c1", "subnet": {"name": "aks1", "cidrBlock": "10.240.0.0/16"}})
    );

    let mut overlay = self::plane(r#"{"networkPluginMode": "overlay"}"#).unwrap();
    overlay.default(&dry_run()).unwrap();
    let network = overlay.spec.class.virtual_network.unwrap();
    assert_eq!(
        (
            network.cidr_block.as_str(),
            network.subnet.unwrap().cidr_block.as_str()
        ),
        ("10.224.0.0/12", "10.224.0.0/16")
    );
    // No key is generated on a dry run, nor when the field is left out.
    let mut dry = self::plane(r#"{"sshPublicKey": ""}"#).unwrap();
    dry.default(&dry_run()).unwrap();
    assert_eq!(dry.spec.ssh_public_key.as_deref(), Some(""));
    let mut none = self::plane("{}").unwrap();
    none.default(&create()).unwrap();
    assert_eq!(none.spec.ssh_public_key, None);
    assert_eq!(
        none.spec.class.sku.unwrap().tier,
        capz_api::azuremanagedcontrolplane::AzureManagedControlPlaneSkuTier::Free
    );
}

#[test]
fn the_dns_service_ip_lies_in_the_clusters_one_service_range_and_ends_in_10() {
    let check = |patch: &str, services: &[&str]| {
        let plane = plane(patch).unwrap();
        let verdict = plane.validate_create(&with_cluster(dry_run(), services));
        verdict
            .errors
            .iter()
            .map(|e| e.path.to_string())
            .collect::<Vec<_>>()
    };
    assert!(check(r#"{"dnsServiceIP": "10.96.0.10"}"#, &["10.96.0.0/12"]).is_empty());
    assert_eq!(
        check(r#"{"dnsServiceIP": "10.96.0.11"}"#, &["10.96.0.0/12"]),
        ["spec.dnsServiceIP"]
    );
    assert_eq!(
        check(r#"{"dnsServiceIP": "192.168.0.10"}"#, &["10.96.0.0/12"]),
        ["spec.dnsServiceIP"]
    );
    assert_eq!(
        check(r#"{"dnsServiceIP": "10.96.0.10"}"#, &[]),
        ["Cluster.spec.clusterNetwork.services.cidrBlocks"]
    );
    assert_eq!(
        check("{}", &["10.96.0.0/12", "10.128.0.0/12"]),
        ["Cluster.spec.clusterNetwork.services.cidrBlocks"]
    );
    // Without the Cluster, nothing is known and nothing refused.
    let plane = plane(r#"{"dnsServiceIP": "10.96.0.11"}"#).unwrap();
    assert!(plane.validate_create(&dry_run()).allowed());
    assert_eq!(plane.cluster_query(None, Operation::Create).unwrap().name, "c1");
}

/// The update of a defaulted plane made by `patch` onto `base`.
fn update_errors(base: &str, patch: &str, status: Option<serde_json::Value>) -> Vec<String> {
    let mut old = plane(base).unwrap();
    old.default(&create()).unwrap();
    if let Some(status) = status {
        old.status = Some(serde_json::from_value(status).unwrap());
    }
    let mut new_spec = serde_json::to_value(&old.spec).unwrap();
    merge(&mut new_spec, &serde_json::from_str(patch).unwrap());
    let mut new = old.clone();
    new.spec = serde_json::from_value(new_spec).unwrap();
    new.default(&update()).unwrap();
    new.validate_update(&old, &update())
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn immutable_fields_stay_and_the_version_only_goes_up() {
    let refused = |base: &str, patch: &str, field: &str, words: &str| {
        let errors = update_errors(base, patch, None);
        assert!(
            errors.len() == 1 && errors[0].starts_with(field) && errors[0].contains(words),
            "{patch}: {errors:?}"
        );
    };
    refused(
        "{}",
        r#"{"location": "northeurope"}"#,
        "spec.location",
        "field is immutable",
    );
    refused(
        "{}",
        r#"{"subscriptionID": "s"}"#,
        "spec.subscriptionID",
        "already empty",
    );
    refused(
        "{}",
        r#"{"nodeResourceGroupName": "other"}"#,
        "spec.nodeResourceGroupName",
        "immutable",
    );
    refused(
        "{}",
        r#"{"networkPlugin": "kubenet"}"#,
        "spec.networkPlugin",
        "immutable",
    );
    refused(
        "{}",
        r#"{"outboundType": "userDefinedRouting"}"#,
        "spec.outboundType",
        "immutable",
    );
    refused("{}", r#"{"dnsPrefix": "other"}"#, "spec.dnsPrefix", "immutable");
    refused(
        "{}",
        r#"{"virtualNetwork": {"name": "other"}}"#,
        "spec.virtualNetwork.name",
        "Virtual Network Name is immutable",
    );
    refused(
        "{}",
        r#"{"virtualNetwork": {"subnet": {"cidrBlock": "10.241.0.0/16"}}}"#,
        "spec.virtualNetwork.subnet.cidrBlock",
        "immutable",
    );
    refused(
        "{}",
        r#"{"version": "v1.32.9"}"#,
        "spec.version",
        "cannot be downgraded",
    );
    refused(
        r#"{"aadProfile": {"managed": true, "adminGroupObjectIDs": ["g"]}}"#,
        r#"{"aadProfile": null}"#,
        "spec.aadProfile",
        "cannot disable",
    );
    refused(
        r#"{"addonProfiles": [{"name": "azurepolicy", "enabled": true}]}"#,
        r#"{"addonProfiles": []}"#,
        "spec.addonProfiles",
        "cannot remove",
    );
    refused(
        r#"{"apiServerAccessProfile": {"enablePrivateCluster": false}}"#,
        r#"{"apiServerAccessProfile": {"enablePrivateCluster": true}}"#,
        "spec.apiServerAccessProfile",
        "immutable",
    );
    refused(
        r#"{"oidcIssuerProfile": {"enabled": true}}"#,
        r#"{"oidcIssuerProfile": {"enabled": false}}"#,
        "spec.oidcIssuerProfile.enabled",
        "cannot be disabled",
    );
    refused(
        r#"{"networkPolicy": "azure"}"#,
        r#"{"networkPluginMode": "overlay"}"#,
        "spec.networkPluginMode",
        "NetworkPolicy is set",
    );
    refused(
        r#"{"autoUpgradeProfile": {"upgradeChannel": "stable"}}"#,
        r#"{"autoUpgradeProfile": null}"#,
        "spec.autoUpgradeProfile.upgradeChannel",
        "none",
    );
    refused(
        r#"{"securityProfile": {"imageCleaner": {"enabled": true}}}"#,
        r#"{"securityProfile": null}"#,
        "spec.securityProfile.imageCleaner",
        "cannot unset",
    );
}

#[test]
fn what_may_change_does_and_the_version_stays_above_auto_upgrades() {
    // What may change does.
    for patch in [
        r#"{"version": "v1.34.0"}"#,
        r#"{"apiServerAccessProfile": {"authorizedIPRanges": ["1.2.3.4/32"]}}"#,
        r#"{"virtualNetwork": {"subnet": {"serviceEndpoints": [{"service": "Microsoft.Storage", "locations": ["*"]}]}}}"#,
        r#"{"additionalTags": {"a": "b"}}"#,
    ] {
        assert_eq!(update_errors("{}", patch, None), Vec::<String>::new(), "{patch}");
    }
    let status = Some(json!({"autoUpgradeVersion": "v1.33.5"}));
    let errors = update_errors("{}", r#"{"version": "v1.33.4"}"#, status.clone());
    assert!(
        errors.iter().any(|e| e.contains("auto-upgraded to v1.33.5")),
        "{errors:?}"
    );
    assert!(update_errors("{}", r#"{"version": "v1.33.6"}"#, status).is_empty());
}

#[test]
fn an_object_stored_before_the_defaults_is_not_refused_for_gaining_them() {
    let old = plane("{}").unwrap();
    let mut new = old.clone();
    new.default(&update()).unwrap();
    assert!(new.validate_update(&old, &update()).allowed());
}

fn template(patch: &str) -> AzureManagedControlPlaneTemplate {
    let mut spec = json!({"version": "v1.33.2", "location": "westeurope", "resourceGroupName": "rg",
        "identityRef": {"name": "identity"}});
    merge(&mut spec, &serde_json::from_str(patch).unwrap());
    serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureManagedControlPlaneTemplate",
        "metadata": {"name": "tmpl", "namespace": "default"},
        "spec": {"template": {"spec": spec}},
    }))
    .unwrap()
}

#[test]
fn templates_get_their_defaults_and_keep_their_fields_outside_topology_dry_runs() {
    let mut old = template(r#"{"version": "1.33.2"}"#);
    old.default(&create()).unwrap();
    let class = &old.spec.template.spec.class;
    assert_eq!(class.version, "v1.33.2");
    assert_eq!(class.enable_preview_features, Some(false));
    assert_eq!(
        serde_json::to_value(&class.virtual_network).unwrap(),
        json!({"name": "", "cidrBlock": "10.0.0.0/8", "subnet": {"name": "tmpl", "cidrBlock": "10.240.0.0/16"}})
    );
    assert!(old.validate_create(&create()).allowed());
    let mut new = old.clone();
    new.spec.template.spec.class.location = "northeurope".to_owned();
    let verdict = new.validate_update(&old, &update());
    assert_eq!(verdict.errors[0].path.as_str(), "spec.template.spec.location");
    // The same request from the topology controller's dry run passes.
    new.metadata.annotations = Some([(crate::TOPOLOGY_DRY_RUN_ANNOTATION.to_owned(), String::new())].into());
    let dry = context(Operation::Update, true, None);
    assert!(new.validate_update(&old, &dry).allowed());
    // An unchanged template passes whoever sends it.
    assert!(old.validate_update(&old, &update()).allowed());
    let named = template(r#"{"virtualNetwork": {"name": "shared", "cidrBlock": "10.0.0.0/8"}}"#);
    assert_eq!(named.validate_create(&create()).warnings.len(), 1);
}
