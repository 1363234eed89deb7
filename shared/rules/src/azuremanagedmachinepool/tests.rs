//! The rules of AzureManagedMachinePool and its template, one case per CAPZ rule.

use serde_json::json;

use super::*;
use crate::testing::{Case, context, create, dry_run, failures, merge, rejected, update};
use crate::{ClusterFacts, OwnerCluster};

/// A System pool `pool0` of cluster `c1` with `patch` (JSON text, onto `spec`) merged in.
fn pool(patch: &str) -> Result<AzureManagedMachinePool, String> {
    let mut spec = json!({"mode": "System", "sku": "Standard_D2s_v3"});
    merge(
        &mut spec,
        &serde_json::from_str(patch).map_err(|err| format!("{patch}: {err}"))?,
    );
    serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureManagedMachinePool",
        "metadata": {"name": "pool0", "namespace": "default", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
        "spec": spec,
    }))
    .map_err(|err| format!("{patch}: {err}"))
}

const VALID: &[(&str, &str)] = &[
    ("minimal", "{}"),
    ("max pods at the bounds", r#"{"maxPods": 250}"#),
    (
        "windows user pool",
        r#"{"mode": "User", "osType": "Windows", "name": "win1"}"#,
    ),
    ("twelve characters", r#"{"name": "abcdefghijk1"}"#),
    (
        "public IP prefix",
        r#"{"enableNodePublicIP": true, "nodePublicIPPrefixID": "/subscriptions/0a1b2c3d-0000-4000-8000-000000000001/resourceGroups/g/providers/Microsoft.Network/publicIPPrefixes/p"}"#,
    ),
    (
        "kubelet settings",
        r#"{"kubeletConfig": {"cpuCfsQuotaPeriod": "100ms", "imageGcHighThreshold": 70, "imageGcLowThreshold": 50, "allowedUnsafeSysctls": ["net.core.somaxconn", "kernel.msgmax", "kernel.sem"], "failSwapOn": false}, "linuxOSConfig": {"swapFileSizeMB": 1024, "sysctls": {"netIpv4IPLocalPortRange": "1024 65000"}}}"#,
    ),
    ("subnet name", r#"{"subnetName": "my-subnet.1"}"#),
];

const INVALID: &[Case] = &[
    Case {
        rule: "validateMaxPods",
        patch: r#"{"maxPods": 9}"#,
        path: "maxPods",
        message: "between 10 and 250",
    },
    Case {
        rule: "validateOSType",
        patch: r#"{"osType": "Windows", "name": "win"}"#,
        path: "osType",
        message: "OSType 'Linux'",
    },
    Case {
        rule: "validateMPName length",
        patch: r#"{"name": "abcdefghijklm"}"#,
        path: "name",
        message: "12 characters",
    },
    Case {
        rule: "validateMPName windows",
        patch: r#"{"mode": "User", "osType": "Windows", "name": "windows"}"#,
        path: "name",
        message: "6 characters",
    },
    Case {
        rule: "validateMPName first",
        patch: r#"{"name": "1pool"}"#,
        path: "name",
        message: "lowercase letter",
    },
    Case {
        rule: "validateMPName chars",
        patch: r#"{"name": "pool-a"}"#,
        path: "name",
        message: "lowercase alphanumeric",
    },
    Case {
        rule: "validateNodeLabels",
        patch: r#"{"nodeLabels": {"kubernetes.azure.com/x": "y"}}"#,
        path: "nodeLabels[kubernetes.azure.com/x]",
        message: "must not start",
    },
    Case {
        rule: "validateNodePublicIPPrefixID",
        patch: r#"{"enableNodePublicIP": true, "nodePublicIPPrefixID": "/subscriptions/s/p"}"#,
        path: "nodePublicIPPrefixID",
        message: "must match",
    },
    Case {
        rule: "validateEnableNodePublicIP",
        patch: r#"{"nodePublicIPPrefixID": "/subscriptions/0a1b2c3d-0000-4000-8000-000000000001/resourceGroups/g/providers/Microsoft.Network/publicIPPrefixes/p"}"#,
        path: "enableNodePublicIP",
        message: "must be set to true",
    },
    Case {
        rule: "validateKubeletConfig period",
        patch: r#"{"kubeletConfig": {"cpuCfsQuotaPeriod": "100"}}"#,
        path: "kubeletConfig.cpuCfsQuotaPeriod",
        message: "'ms' suffix",
    },
    Case {
        rule: "validateKubeletConfig gc",
        patch: r#"{"kubeletConfig": {"imageGcHighThreshold": 50, "imageGcLowThreshold": 70}}"#,
        path: "kubeletConfig.imageGcLowThreshold",
        message: "must not be greater",
    },
    Case {
        rule: "validateKubeletConfig sysctls",
        patch: r#"{"kubeletConfig": {"allowedUnsafeSysctls": ["kernel.shm"]}}"#,
        path: "kubeletConfig.allowedUnsafeSysctls[0]",
        message: "not a supported",
    },
    Case {
        rule: "validateLinuxOSConfig swap",
        patch: r#"{"linuxOSConfig": {"swapFileSizeMB": 1024}}"#,
        path: "linuxOSConfig.swapFileSizeMB",
        message: "FailSwapOn",
    },
    Case {
        rule: "validateLinuxOSConfig range format",
        patch: r#"{"linuxOSConfig": {"sysctls": {"netIpv4IPLocalPortRange": "1024-65000"}}}"#,
        path: "linuxOSConfig.sysctls.netIpv4IPLocalPortRange",
        message: "format",
    },
    Case {
        rule: "validateLinuxOSConfig range first",
        patch: r#"{"linuxOSConfig": {"sysctls": {"netIpv4IPLocalPortRange": "1000 40000"}}}"#,
        path: "linuxOSConfig.sysctls.netIpv4IPLocalPortRange",
        message: "[1024 - 60999]",
    },
    Case {
        rule: "validateMPSubnetName",
        patch: r#"{"subnetName": "-bad"}"#,
        path: "subnetName",
        message: "regex",
    },
];

#[test]
fn capz_admits_what_capz_admits_and_refuses_each_rule_at_its_field() {
    let verdict_of = |patch: &str| Ok(pool(patch)?.validate_create(&dry_run()));
    let mut problems = rejected(VALID, verdict_of);
    problems.extend(failures(INVALID, "spec", verdict_of));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_pool_is_named_after_its_object_runs_linux_and_is_labelled_with_its_mode() {
    let mut pool = pool("{}").unwrap();
    pool.default(&create()).unwrap();
    assert_eq!(pool.spec.class.name.as_deref(), Some("pool0"));
    assert_eq!(pool.spec.class.os_type, Some(OsType::Linux));
    assert_eq!(
        pool.metadata.labels.as_ref().unwrap()[AGENT_POOL_MODE_LABEL],
        "System"
    );
    // The object's name is checked when the spec names none.
    let mut long = self::pool(r#"{"mode": "User"}"#).unwrap();
    long.metadata.name = Some("averyverylongname".to_owned());
    let verdict = long.validate_create(&dry_run());
    assert!(
        verdict.errors[0].to_string().contains("metadata.name"),
        "{verdict:?}"
    );
}

fn cluster(system_pools: usize, deleting: bool) -> OwnerCluster {
    OwnerCluster::Found(ClusterFacts {
        deleting,
        system_pools: Some(system_pools),
        ..ClusterFacts::default()
    })
}

#[test]
fn the_last_system_pool_stays_a_system_pool_and_is_not_deleted() {
    let mut old = pool("{}").unwrap();
    old.default(&create()).unwrap();
    let mut user = old.clone();
    user.spec.class.mode = NodePoolMode::User;
    user.default(&update()).unwrap();
    let query = user.cluster_query(Some(&old), Operation::Update).unwrap();
    assert_eq!((query.name.as_str(), query.system_pools), ("c1", true));
    let with = |cluster: OwnerCluster, operation| Context {
        cluster,
        ..context(operation, false, None)
    };
    let verdict = user.validate_update(&old, &with(cluster(1, false), Operation::Update));
    assert_eq!(verdict.errors[0].path.as_str(), "spec.mode");
    assert!(
        user.validate_update(&old, &with(cluster(2, false), Operation::Update))
            .allowed()
    );
    assert!(
        user.validate_update(&old, &with(cluster(1, true), Operation::Update))
            .allowed()
    );

    assert!(old.cluster_query(None, Operation::Delete).is_some());
    let verdict = old.validate_delete(&with(cluster(1, false), Operation::Delete));
    assert!(
        verdict.errors[0]
            .to_string()
            .contains("AKS Cluster must have at least one system pool")
    );
    assert!(
        old.validate_delete(&with(cluster(2, false), Operation::Delete))
            .allowed()
    );
    assert!(
        old.validate_delete(&with(cluster(1, true), Operation::Delete))
            .allowed()
    );
    assert!(
        old.validate_delete(&with(OwnerCluster::Missing, Operation::Delete))
            .allowed()
    );
    // User pools, unlabelled pools and pools clusterctl moves are not looked up.
    assert!(user.cluster_query(None, Operation::Delete).is_none());
    let mut moved = old.clone();
    moved.metadata.annotations = Some([(DELETE_FOR_MOVE_ANNOTATION.to_owned(), String::new())].into());
    assert!(moved.cluster_query(None, Operation::Delete).is_none());
    let mut unlabelled = old.clone();
    unlabelled.metadata.labels = None;
    assert!(unlabelled.cluster_query(None, Operation::Delete).is_none());
}

#[test]
fn immutable_fields_stay() {
    let mut old = pool(r#"{"availabilityZones": ["1", "2"], "subnetName": "a"}"#).unwrap();
    old.default(&create()).unwrap();
    let changed = |patch: &str| {
        let mut spec = serde_json::to_value(&old.spec).unwrap();
        merge(&mut spec, &serde_json::from_str(patch).unwrap());
        let mut new = old.clone();
        new.spec = serde_json::from_value(spec).unwrap();
        new.default(&update()).unwrap();
        new.validate_update(&old, &update())
            .errors
            .iter()
            .map(|error| error.path.to_string())
            .collect::<Vec<_>>()
    };
    for (patch, field) in [
        (r#"{"name": "pool1"}"#, "spec.name"),
        (r#"{"sku": "Standard_D4s_v3"}"#, "spec.sku"),
        (r#"{"osDiskSizeGB": 64}"#, "spec.osDiskSizeGB"),
        (r#"{"availabilityZones": ["1"]}"#, "spec.availabilityZones"),
        (r#"{"maxPods": 50}"#, "spec.maxPods"),
        (r#"{"subnetName": "b"}"#, "spec.subnetName"),
        (
            r#"{"kubeletConfig": {"failSwapOn": false}}"#,
            "spec.kubeletConfig",
        ),
        (r#"{"enableFIPS": true}"#, ""),
        (r#"{"availabilityZones": ["2", "1"]}"#, ""),
        (r#"{"scaling": {"minSize": 1, "maxSize": 3}}"#, ""),
        (
            r#"{"nodeLabels": {"kubernetes.azure.com/a": "b"}}"#,
            "spec.nodeLabels[kubernetes.azure.com/a]",
        ),
    ] {
        let expected: Vec<String> = [field]
            .iter()
            .filter(|f| !f.is_empty())
            .map(|f| (*f).to_owned())
            .collect();
        assert_eq!(changed(patch), expected, "{patch}");
    }
}

#[test]
fn templates_follow_the_pool_rules_under_their_template() {
    let mut template: AzureManagedMachinePoolTemplate = serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureManagedMachinePoolTemplate",
        "metadata": {"name": "pooltmpl", "namespace": "default"},
        "spec": {"template": {"spec": {"mode": "System", "sku": "Standard_D2s_v3", "maxPods": 5}}},
    }))
    .unwrap();
    template.default(&create()).unwrap();
    assert_eq!(template.spec.template.spec.name.as_deref(), Some("pooltmpl"));
    let verdict = template.validate_create(&create());
    assert_eq!(verdict.errors[0].path.as_str(), "spec.template.spec.maxPods");
    let mut new = template.clone();
    new.spec.template.spec.sku = "Standard_D4s_v3".to_owned();
    assert_eq!(
        new.validate_update(&template, &update()).errors[0].path.as_str(),
        "spec.template.spec.sku"
    );
    new.metadata.annotations = Some([(crate::TOPOLOGY_DRY_RUN_ANNOTATION.to_owned(), String::new())].into());
    assert!(
        new.validate_update(&template, &context(Operation::Update, true, None))
            .allowed()
    );
    // Its cluster is the one its node labels name; none here.
    assert!(template.cluster_query(None, Operation::Delete).is_none());
}
