//! The rules of AzureMachinePool and AzureMachinePoolMachine, one case per CAPZ rule.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use capz_api::azuremachinepool::{DeletePolicy, DeploymentStrategyType};
use capz_api::common::compute::{BootDiagnosticsStorageAccountType, CachingType, SpotEvictionPolicy};
use capz_api::{AzureMachinePoolMachineSpec, AzureMachinePoolSpec};

use super::*;
use crate::testing::{
    BrokenEntropy, Case, GENERATED_NAME, GUID, IDENTITY_INVALID, SUBSCRIPTION, context, create, dry_run,
    failures, merge, mismatch, rejected, test_key, update,
};
use crate::{Features, Operation, PoolOwner};

fn gate_off(ctx: Context<'static>) -> Context<'static> {
    Context {
        features: Features {
            machine_pool: false,
            ..Features::default()
        },
        ..ctx
    }
}

/// A minimal valid pool with `patch` (JSON text, onto `spec`) merged in.
fn pool(patch: &str) -> Result<AzureMachinePool, String> {
    let mut spec = json!({
        "location": "westeurope",
        "template": {"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux"}, "sshPublicKey": test_key(1)},
    });
    merge(
        &mut spec,
        &serde_json::from_str(patch).map_err(|err| format!("patch {patch}: {err}"))?,
    );
    serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureMachinePool",
        "metadata": {"name": "pool0", "namespace": "default", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
        "spec": spec,
    }))
    .map_err(|err| format!("patch {patch}: {err}"))
}

fn pool_machine(provider_id: &str) -> AzureMachinePoolMachine {
    AzureMachinePoolMachine::new(
        "pool0-0",
        AzureMachinePoolMachineSpec {
            provider_id: provider_id.to_owned(),
            instance_id: Some("0".to_owned()),
        },
    )
}

fn defaulted(patch: &str, ctx: &Context<'_>) -> Result<AzureMachinePoolSpec, String> {
    let mut pool = pool(patch)?;
    pool.default(ctx).map_err(|err| err.to_string())?;
    Ok(pool.spec)
}

/// Pools CAPZ admits (checked without defaulting, on dry-run).
const VALID: &[(&str, &str)] = &[
    ("no image: the reference image", "{}"),
    (
        "marketplace image",
        r#"{"template": {"image": {"marketplace": {"publisher": "p", "offer": "o", "sku": "s", "version": "latest"}}}}"#,
    ),
    (
        "termination notice at its bounds",
        r#"{"template": {"terminateNotificationTimeout": 5}}"#,
    ),
    (
        "termination notice at its longest",
        r#"{"template": {"terminateNotificationTimeout": 15}}"#,
    ),
    (
        "surge only",
        r#"{"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"}}}"#,
    ),
    (
        "percentages",
        r#"{"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0, "deletePolicy": "Newest"}}}"#,
    ),
    (
        "user-assigned identity",
        r#"{"identity": "UserAssigned", "userAssignedIdentities": [{"providerID": "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id"}]}"#,
    ),
    (
        "system-assigned identity with its role",
        r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/subscriptions/s/", "definitionID": "/d"}}"#,
    ),
    (
        "interfaces",
        r#"{"template": {"networkInterfaces": [{"subnetName": "a", "privateIPConfigs": 2}, {"subnetName": "b"}]}}"#,
    ),
    (
        "deprecated subnet alone",
        r#"{"template": {"subnetName": "node"}}"#,
    ),
    (
        "CAPZ checks no data disks of a pool",
        r#"{"template": {"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 1}, {"nameSuffix": "a", "diskSizeGB": 8}]}}"#,
    ),
    (
        "CAPZ checks no confidential VM settings of a pool",
        r#"{"template": {"osDisk": {"osType": "Linux", "managedDisk": {"storageAccountType": "Premium_LRS",
            "securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}}}}"#,
    ),
    (
        "CAPZ lets interfaces and the deprecated accelerated networking be (with a warning)",
        r#"{"template": {"acceleratedNetworking": true, "networkInterfaces": [{"subnetName": "a"}]}}"#,
    ),
    ("Flexible orchestration", r#"{"orchestrationMode": "Flexible"}"#),
];

/// One case per CAPZ rule of a pool's spec, paths under `spec` (the identity rules are
/// [`IDENTITY_INVALID`], shared with AzureMachine).
const INVALID: &[Case] = &[
    Case {
        rule: "validateImage: two sources",
        patch: r#"{"template": {"image": {"id": "/i", "marketplace": {"publisher": "p", "offer": "o", "sku": "s", "version": "v"}}}}"#,
        path: "template.image.marketplace",
        message: "already given by id",
    },
    Case {
        rule: "validateImage: shared gallery without version",
        patch: r#"{"template": {"image": {"sharedGallery": {"subscriptionID": "s", "resourceGroup": "g", "gallery": "g", "name": "n", "version": ""}}}}"#,
        path: "template.image.sharedGallery.version",
        message: "needs version",
    },
    Case {
        rule: "validateTerminateNotificationTimeout: below 5",
        patch: r#"{"template": {"terminateNotificationTimeout": 4}}"#,
        path: "template.terminateNotificationTimeout",
        message: "between 5 and 15 minutes",
    },
    Case {
        rule: "validateTerminateNotificationTimeout: above 15",
        patch: r#"{"template": {"terminateNotificationTimeout": 16}}"#,
        path: "template.terminateNotificationTimeout",
        message: "Invalid value: 16",
    },
    Case {
        rule: "validateSSHKey",
        patch: r#"{"template": {"sshPublicKey": "bm90IGEga2V5"}}"#,
        path: "template.sshPublicKey",
        message: "Azure accepts ssh-rsa",
    },
    Case {
        rule: "validateDiagnostics",
        patch: r#"{"template": {"diagnostics": {"boot": {"storageAccountType": "UserManaged"}}}}"#,
        path: "template.diagnostics.boot.userManaged",
        message: "needs userManaged.storageAccountURI",
    },
    Case {
        rule: "validateDiagnostics: an account with managed storage",
        patch: r#"{"template": {"diagnostics": {"boot": {"storageAccountType": "Managed", "userManaged": {"storageAccountURI": "https://a"}}}}}"#,
        path: "template.diagnostics.boot.userManaged.storageAccountURI",
        message: "not Managed",
    },
    Case {
        rule: "validateStrategy: both budgets zero",
        patch: r#"{"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}"#,
        path: "strategy.rollingUpdate.maxUnavailable",
        message: "while maxSurge is 0 too",
    },
    Case {
        rule: "validateStrategy: zero percent is zero",
        patch: r#"{"strategy": {"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": 0}}}"#,
        path: "strategy.rollingUpdate.maxUnavailable",
        message: "while maxSurge is 0 too",
    },
    Case {
        rule: "validateStrategy: a budget that is no percentage",
        patch: r#"{"strategy": {"rollingUpdate": {"maxSurge": "one"}}}"#,
        path: "strategy.rollingUpdate.maxSurge",
        message: "a percentage of the replicas",
    },
    Case {
        rule: "validateStrategy: a negative budget",
        patch: r#"{"strategy": {"rollingUpdate": {"maxUnavailable": -1}}}"#,
        path: "strategy.rollingUpdate.maxUnavailable",
        message: "cannot be negative",
    },
    Case {
        rule: "validateSystemAssignedIdentity: no GUID",
        patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"name": "mine", "scope": "/s", "definitionID": "/d"}}"#,
        path: "systemAssignedIdentityRole.name",
        message: "must be a GUID",
    },
    Case {
        rule: "validateSystemAssignedIdentityRole: named twice",
        patch: r#"{"identity": "SystemAssigned", "roleAssignmentName": "9f8e7d6c-5b4a-4321-8fed-cba987654321",
            "systemAssignedIdentityRole": {"name": "9f8e7d6c-5b4a-4321-8fed-cba987654321", "scope": "/s", "definitionID": "/d"}}"#,
        path: "systemAssignedIdentityRole.name",
        message: "remove roleAssignmentName",
    },
    Case {
        rule: "validateNetwork",
        patch: r#"{"template": {"subnetName": "node", "networkInterfaces": [{"subnetName": "node"}]}}"#,
        path: "template.subnetName",
        message: "set networkInterfaces[0].subnetName instead",
    },
    Case {
        rule: "validateOSDisk: size",
        patch: r#"{"template": {"osDisk": {"osType": "Linux", "diskSizeGB": 4096}}}"#,
        path: "template.osDisk.diskSizeGB",
        message: "between 1 and 2048",
    },
    Case {
        rule: "validateOSDisk: OS type",
        patch: r#"{"template": {"osDisk": {"osType": ""}}}"#,
        path: "template.osDisk.osType",
        message: "set Linux or Windows",
    },
    Case {
        rule: "validateOSDisk: Ultra SSD",
        patch: r#"{"template": {"osDisk": {"osType": "Linux", "managedDisk": {"storageAccountType": "UltraSSD_LRS"}}}}"#,
        path: "template.osDisk.managedDisk.storageAccountType",
        message: "only be data disks",
    },
    Case {
        rule: "validateOSDisk: ephemeral with an encryption set",
        patch: r#"{"template": {"osDisk": {"osType": "Linux", "diffDiskSettings": {"option": "Local"},
            "managedDisk": {"storageAccountType": "Standard_LRS", "diskEncryptionSet": {"id": "des"}}}}}"#,
        path: "template.osDisk.managedDisk.diskEncryptionSet",
        message: "ephemeral OS disk",
    },
];

#[test]
fn pools_capz_admits_are_admitted() {
    let ctx = dry_run();
    let problems = rejected(VALID, |patch| Ok(pool(patch)?.validate_create(&ctx)));
    assert!(
        problems.is_empty(),
        "valid pools refused:\n{}",
        problems.join("\n")
    );
}

#[test]
fn each_capz_rule_refuses_at_its_field() {
    let ctx = dry_run();
    let mut problems = Vec::new();
    for cases in [INVALID, IDENTITY_INVALID] {
        problems.extend(failures(cases, "spec", |patch| {
            Ok(pool(patch)?.validate_create(&ctx))
        }));
        // CAPZ checks a pool again on every update.
        problems.extend(failures(cases, "spec", |patch| {
            Ok(pool(patch)?.validate_update(&pool("{}")?, &context(Operation::Update, true, None)))
        }));
    }
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn a_real_create_needs_the_generated_key_and_role_name() {
    let ctx = create();
    let cases = [
        Case {
            rule: "key missing after defaulting",
            patch: r#"{"template": {"sshPublicKey": ""}}"#,
            path: "template.sshPublicKey",
            message: "OpenSSH public key",
        },
        Case {
            rule: "role name missing after defaulting",
            patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/s", "definitionID": "/d"}}"#,
            path: "systemAssignedIdentityRole.name",
            message: "needs a GUID name",
        },
    ];
    let problems = failures(&cases, "spec", |patch| Ok(pool(patch)?.validate_create(&ctx)));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // A dry run generates nothing, so nothing generated is needed.
    for case in &cases {
        assert!(
            pool(case.patch).unwrap().validate_create(&dry_run()).allowed(),
            "{}",
            case.rule
        );
    }
}

#[test]
fn accelerated_networking_beside_interfaces_is_said_to_be_ignored() {
    let verdict =
        pool(r#"{"template": {"acceleratedNetworking": true, "networkInterfaces": [{"subnetName": "a"}]}}"#)
            .unwrap()
            .validate_create(&dry_run());
    assert!(verdict.allowed());
    assert!(
        verdict.warnings.iter().any(|warning| warning
            .starts_with("spec.template.acceleratedNetworking: ignored beside networkInterfaces")),
        "{:?}",
        verdict.warnings
    );
}

// ---------------------------------------------------------------------------------------------
// The MachinePool gate and the not-reconciled warning
// ---------------------------------------------------------------------------------------------

#[test]
fn without_the_machine_pool_gate_pools_and_their_machines_are_refused() {
    let off = gate_off(create());
    let mut keyless = pool(r#"{"template": {"sshPublicKey": null}}"#).unwrap();
    keyless.default(&off).unwrap();
    assert_eq!(
        keyless.spec.template.vm.ssh_public_key, None,
        "nothing is defaulted"
    );
    assert_eq!(keyless.spec.strategy, None);
    let problem = mismatch(
        &pool("{}").unwrap().validate_create(&off),
        "spec",
        "MachinePool feature gate is off",
    );
    assert_eq!(problem, None);
    let problem = mismatch(
        &pool_machine("azure:///a").validate_create(&off),
        "spec",
        "MachinePool=true",
    );
    assert_eq!(problem, None);

    // A change of the spec is refused; the metadata may change, so that the object can go.
    let old = pool("{}").unwrap();
    let mut relabelled = old.clone();
    relabelled.metadata.finalizers = Some(Vec::new());
    let off = gate_off(update());
    assert!(relabelled.validate_update(&old, &off).allowed());
    let resized = pool(r#"{"template": {"vmSize": "Standard_D4s_v3"}}"#).unwrap();
    assert_eq!(
        mismatch(&resized.validate_update(&old, &off), "spec", "gate is off"),
        None
    );
    let machine = pool_machine("azure:///a");
    assert!(machine.validate_update(&machine, &off).allowed());
    assert!(
        !pool_machine("azure:///b")
            .validate_update(&machine, &off)
            .allowed()
    );
}

// ---------------------------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------------------------

#[test]
fn the_key_is_generated_when_missing_on_a_real_create_or_update() {
    let keyless = r#"{"template": {"sshPublicKey": null}}"#;
    let key = |ctx: &Context<'_>| defaulted(keyless, ctx).unwrap().template.vm.ssh_public_key;
    assert_eq!(key(&create()), Some(test_key(7)));
    assert_eq!(
        key(&update()),
        Some(test_key(7)),
        "CAPZ gives a pool a key on updates too"
    );
    assert_eq!(key(&dry_run()), None);
    assert_eq!(
        defaulted("{}", &create()).unwrap().template.vm.ssh_public_key,
        Some(test_key(1))
    );

    let err = pool(keyless)
        .unwrap()
        .default(&Context {
            entropy: &BrokenEntropy,
            ..create()
        })
        .unwrap_err();
    assert_eq!(err.path.as_str(), "spec.template.sshPublicKey");
}

#[test]
fn a_system_assigned_identity_gets_a_named_contributor_role_on_the_cluster_subscription() {
    let role = |patch: &str, ctx: &Context<'_>| {
        defaulted(patch, ctx)
            .unwrap()
            .identities
            .system_assigned_identity_role
            .unwrap_or_default()
    };
    let created = role(r#"{"identity": "SystemAssigned"}"#, &create());
    assert_eq!(created.name.as_deref(), Some(GENERATED_NAME));
    assert_eq!(created.scope, Some(format!("/subscriptions/{SUBSCRIPTION}/")));
    assert_eq!(
        created.definition_id,
        Some(format!(
            "/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
        ))
    );
    // A pool may become system-assigned later: its role is named then, as CAPZ does.
    assert_eq!(
        role(r#"{"identity": "SystemAssigned"}"#, &update())
            .name
            .as_deref(),
        Some(GENERATED_NAME)
    );
    assert_eq!(role(r#"{"identity": "SystemAssigned"}"#, &dry_run()).name, None);
    // The deprecated name moves into the role.
    let moved = defaulted(
        &format!(r#"{{"identity": "SystemAssigned", "roleAssignmentName": "{GUID}"}}"#),
        &create(),
    )
    .unwrap();
    assert_eq!(moved.identities.role_assignment_name, None);
    assert_eq!(
        moved
            .identities
            .system_assigned_identity_role
            .unwrap()
            .name
            .as_deref(),
        Some(GUID)
    );
    // Without the cluster's subscription validation asks for the scope and definition.
    let unknown = context(Operation::Create, false, None);
    let mut orphan = pool(r#"{"identity": "SystemAssigned"}"#).unwrap();
    orphan.default(&unknown).unwrap();
    let paths: Vec<String> = orphan
        .validate_create(&unknown)
        .errors
        .iter()
        .map(|error| error.path.to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "spec.systemAssignedIdentityRole.definitionID",
            "spec.systemAssignedIdentityRole.scope"
        ]
    );
}

#[test]
fn the_template_gets_diagnostics_an_interface_and_an_os_disk() {
    let vm = defaulted(
        r#"{"template": {"subnetName": "node", "acceleratedNetworking": true, "osDisk": {"osType": ""}}}"#,
        &create(),
    )
    .unwrap()
    .template
    .vm;
    let boot = vm.diagnostics.and_then(|diagnostics| diagnostics.boot).unwrap();
    assert_eq!(
        boot.storage_account_type,
        BootDiagnosticsStorageAccountType::Managed
    );
    let interfaces = vm.network_interfaces.unwrap();
    assert_eq!(
        (
            interfaces[0].subnet_name.as_deref(),
            interfaces[0].accelerated_networking,
            interfaces[0].private_ip_configs
        ),
        (Some("node"), Some(true), Some(1))
    );
    assert_eq!((vm.subnet_name, vm.accelerated_networking), (None, None));
    assert_eq!(vm.os_disk.os_type, "Linux");
    assert_eq!(vm.os_disk.caching_type, Some(CachingType::None));
    // What is given is kept; data disks are left as they are, as CAPZ leaves a pool's.
    let vm = defaulted(
        r#"{"template": {"osDisk": {"osType": "Windows", "cachingType": "ReadOnly"}, "dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8}]}}"#,
        &create(),
    )
    .unwrap()
    .template
    .vm;
    assert_eq!(
        (vm.os_disk.os_type.as_str(), vm.os_disk.caching_type),
        ("Windows", Some(CachingType::ReadOnly))
    );
    let disk = &vm.data_disks.unwrap()[0];
    assert_eq!((disk.lun, disk.caching_type), (None, None));
}

#[test]
fn spot_instances_are_deallocated_unless_their_os_disk_is_ephemeral() {
    let policy = |patch: &str| {
        defaulted(patch, &create())
            .unwrap()
            .template
            .vm
            .spot_vm_options
            .and_then(|spot| spot.eviction_policy)
    };
    assert_eq!(
        policy(r#"{"template": {"spotVMOptions": {}}}"#),
        Some(SpotEvictionPolicy::Deallocate)
    );
    assert_eq!(
        policy(
            r#"{"template": {"spotVMOptions": {}, "osDisk": {"osType": "Linux", "diffDiskSettings": {"option": "Local"}}}}"#
        ),
        Some(SpotEvictionPolicy::Delete)
    );
    assert_eq!(policy("{}"), None);
}

#[test]
fn the_strategy_is_a_rolling_update_of_one_surge_instance_oldest_first() {
    let strategy = |patch: &str| defaulted(patch, &create()).unwrap().strategy.unwrap();
    let whole = strategy("{}");
    assert_eq!(whole.type_, Some(DeploymentStrategyType::RollingUpdate));
    let rolling = whole.rolling_update.unwrap();
    assert_eq!(
        (rolling.max_surge, rolling.max_unavailable, rolling.delete_policy),
        (
            Some(IntOrString::Int(1)),
            Some(IntOrString::Int(0)),
            Some(DeletePolicy::Oldest)
        )
    );
    // A strategy given in part gets the rest, as the schema fills it in.
    let part = strategy(r#"{"strategy": {"rollingUpdate": {"maxSurge": "25%"}}}"#);
    assert_eq!(part.type_, Some(DeploymentStrategyType::RollingUpdate));
    let rolling = part.rolling_update.unwrap();
    assert_eq!(
        (rolling.max_surge, rolling.max_unavailable),
        (
            Some(IntOrString::String("25%".to_owned())),
            Some(IntOrString::Int(0))
        )
    );
    assert_eq!(strategy(r#"{"strategy": {}}"#).rolling_update, None);
}

#[test]
fn defaulting_twice_changes_nothing_more_and_the_result_is_admitted() {
    let patch = r#"{"identity": "SystemAssigned", "template": {"sshPublicKey": null, "subnetName": "node", "spotVMOptions": {}}}"#;
    let mut pool = pool(patch).unwrap();
    pool.default(&create()).unwrap();
    let once = pool.clone();
    pool.default(&update()).unwrap();
    assert_eq!(pool.spec, once.spec);
    let verdict = once.validate_create(&create());
    assert!(verdict.errors.is_empty(), "{:?}", verdict.errors);
}

// ---------------------------------------------------------------------------------------------
// Updates
// ---------------------------------------------------------------------------------------------

#[test]
fn what_capz_keeps_unchanged_on_a_pool() {
    let ctx = update();
    let named = |name: &str| {
        format!(
            r#"{{"identity": "SystemAssigned", "systemAssignedIdentityRole": {{"name": "{name}", "scope": "/s", "definitionID": "/d"}}}}"#
        )
    };
    let changes: &[(&str, String, String, &str)] = &[
        (
            "role assignment renamed",
            named(GUID),
            named(GENERATED_NAME),
            "spec.systemAssignedIdentityRole.name",
        ),
        (
            "bootstrap extension changed once set",
            r#"{"template": {"disableVMBootstrapExtension": true}}"#.to_owned(),
            r#"{"template": {"disableVMBootstrapExtension": false}}"#.to_owned(),
            "spec.template.disableVMBootstrapExtension",
        ),
        (
            "bootstrap extension unset once set",
            r#"{"template": {"disableVMBootstrapExtension": false}}"#.to_owned(),
            "{}".to_owned(),
            "spec.template.disableVMBootstrapExtension",
        ),
        // Allowed: a pool's instances are rolled onto a changed model.
        (
            "size, image, key and tags",
            "{}".to_owned(),
            format!(
                r#"{{"additionalTags": {{"a": "b"}}, "template": {{"vmSize": "Standard_D4s_v3", "sshPublicKey": "{}",
                    "image": {{"id": "/i"}}}}}}"#,
                test_key(2)
            ),
            "",
        ),
        (
            "bootstrap extension set the first time",
            "{}".to_owned(),
            r#"{"template": {"disableVMBootstrapExtension": false}}"#.to_owned(),
            "",
        ),
        ("role kept", named(GUID), named(GUID), ""),
        (
            "identity switched to system-assigned",
            "{}".to_owned(),
            named(GUID),
            "",
        ),
        (
            "strategy and orchestration",
            "{}".to_owned(),
            r#"{"orchestrationMode": "Flexible", "strategy": {"rollingUpdate": {"maxSurge": 2}}}"#.to_owned(),
            "",
        ),
    ];
    let mut problems = Vec::new();
    for (rule, old, new, path) in changes {
        let verdict = match (pool(old), pool(new)) {
            (Ok(old), Ok(new)) => new.validate_update(&old, &ctx),
            (Err(err), _) | (_, Err(err)) => {
                problems.push(format!("{rule}: {err}"));
                continue;
            }
        };
        let problem = if path.is_empty() {
            (!verdict.allowed()).then(|| format!("refused: {:?}", verdict.errors))
        } else {
            mismatch(&verdict, path, "field is immutable")
        };
        problems.extend(problem.map(|problem| format!("{rule}: {problem}")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_pool_machine_keeps_its_provider_id_once_set() {
    let ctx = update();
    let set = pool_machine(
        "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool0/virtualMachines/0",
    );
    let moved = pool_machine(
        "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool0/virtualMachines/1",
    );
    assert_eq!(
        mismatch(
            &moved.validate_update(&set, &ctx),
            "spec.providerID",
            "field is immutable"
        ),
        None
    );
    assert!(
        set.validate_update(&pool_machine(""), &ctx).allowed(),
        "an empty one may be filled in"
    );
    let mut renumbered = set.clone();
    renumbered.spec.instance_id = Some("7".to_owned());
    assert!(renumbered.validate_update(&set, &ctx).allowed());
    assert!(set.validate_create(&create()).allowed());
    let mut defaulted = set.clone();
    defaulted.default(&create()).unwrap();
    assert_eq!(defaulted.spec, set.spec);
}

fn owned_by(owner: PoolOwner) -> Context<'static> {
    Context {
        machine_pool: owner,
        ..create()
    }
}

fn found(version: &str) -> PoolOwner {
    PoolOwner::Found {
        version: Some(version.to_owned()),
    }
}

#[test]
fn a_flexible_pool_needs_a_machine_pool_on_kubernetes_1_26_or_later() {
    let flexible = pool(r#"{"orchestrationMode": "Flexible"}"#).unwrap();
    let uniform = pool("{}").unwrap();
    for admitted in [found("v1.26.0"), found("1.33.2"), PoolOwner::NotLookedUp] {
        let verdict = flexible.validate_create(&owned_by(admitted.clone()));
        assert!(verdict.allowed(), "{admitted:?}: {verdict:?}");
    }
    for refused in [
        found("v1.25.16"),
        found("v1.26.0-rc.1"),
        found("next"),
        PoolOwner::Found { version: None },
        PoolOwner::Missing,
    ] {
        let verdict = flexible.validate_create(&owned_by(refused.clone()));
        assert_eq!(
            verdict
                .errors
                .iter()
                .map(|error| error.path.to_string())
                .collect::<Vec<_>>(),
            ["spec.orchestrationMode"],
            "{refused:?}"
        );
        // Uniform pools do not depend on the version.
        assert!(uniform.validate_create(&owned_by(refused)).allowed());
    }
    // An update that changes nothing in the spec (a finalizer going after the MachinePool was
    // deleted) is not held up by it.
    let ctx = Context {
        machine_pool: PoolOwner::Missing,
        ..update()
    };
    assert!(flexible.validate_update(&flexible, &ctx).allowed());
    let mut changed = flexible.clone();
    changed.spec.template.vm.vm_size = "Standard_D4s_v3".to_owned();
    assert!(!changed.validate_update(&flexible, &ctx).allowed());
}
