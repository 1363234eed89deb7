//! The rules of AzureCluster and AzureClusterTemplate: the defaults a minimal manifest gets, each
//! validation rule with its field path and message, and what cannot change after creation.

#![expect(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tables of cases; a broken case fails the test"
)]

use capz_api::azurecluster::{AzureBastion, BastionSpec};
use capz_api::common::network::SubnetRole;
use capz_api::{AzureCluster, AzureClusterTemplate};
use capz_rules::{Context, Entropy, Features, Operation, Rules, Verdict};
use serde_json::{Value, json};

struct NoEntropy;

impl Entropy for NoEntropy {
    fn ssh_public_key(&self) -> Result<String, String> {
        Err("cluster rules generate nothing".to_owned())
    }

    fn uuid(&self) -> String {
        String::new()
    }
}

fn ctx(operation: Operation, features: Features) -> Context<'static> {
    Context {
        operation,
        dry_run: false,
        features,
        entropy: &NoEntropy,
        cluster_subscription_id: None,
        machine_pool: capz_rules::PoolOwner::NotLookedUp,
        cluster: capz_rules::OwnerCluster::NotLookedUp,
    }
}

fn cluster(spec: Value) -> AzureCluster {
    let mut base = json!({
        "location": "westeurope",
        "subscriptionID": "00000000-0000-0000-0000-000000000000",
        "identityRef": {"kind": "AzureClusterIdentity", "name": "identity", "namespace": "default"},
    });
    merge(&mut base, spec);
    serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureCluster",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": base,
    }))
    .unwrap()
}

fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    base.remove(&key);
                } else {
                    merge(base.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        (base, patch) => *base = patch,
    }
}

fn defaulted(spec: Value, features: Features) -> AzureCluster {
    let mut c = cluster(spec);
    c.default(&ctx(Operation::Create, features)).unwrap();
    c
}

fn spec_json(c: &AzureCluster) -> Value {
    serde_json::to_value(&c.spec).unwrap()
}

/// The errors of a verdict as `path: message` lines.
fn errors(verdict: &Verdict) -> Vec<String> {
    verdict.errors.iter().map(ToString::to_string).collect()
}

fn create_errors(spec: Value, features: Features) -> Vec<String> {
    let c = defaulted(spec, features);
    errors(&c.validate_create(&ctx(Operation::Create, features)))
}

#[test]
fn a_minimal_cluster_gets_capz_network() {
    let c = defaulted(json!({}), Features::default());
    let spec = spec_json(&c);
    assert_eq!(spec["resourceGroup"], "c1");
    assert_eq!(spec["azureEnvironment"], "AzurePublicCloud");
    assert_eq!(
        spec["networkSpec"]["vnet"],
        json!({"name": "c1-vnet", "resourceGroup": "c1", "cidrBlocks": ["10.0.0.0/8"]})
    );
    assert_eq!(
        spec["networkSpec"]["subnets"],
        json!([
            {"name": "c1-controlplane-subnet", "role": "control-plane", "cidrBlocks": ["10.0.0.0/16"],
             "securityGroup": {"name": "c1-controlplane-nsg"}, "routeTable": {"name": "c1-node-routetable"}},
            {"name": "c1-node-subnet", "role": "node", "cidrBlocks": ["10.1.0.0/16"],
             "securityGroup": {"name": "c1-node-nsg"}, "routeTable": {"name": "c1-node-routetable"},
             "natGateway": {"name": "c1-node-natgw", "ip": {"name": "pip-c1-node-natgw"}}},
        ]),
        "CAPZ TestSubnetDefaults \"no subnets\": the control plane shares the node route table"
    );
    assert_eq!(
        spec["networkSpec"]["apiServerLB"],
        json!({"name": "c1-public-lb", "type": "Public", "sku": "Standard", "idleTimeoutInMinutes": 4,
               "frontendIPs": [{"name": "c1-public-lb-frontEnd", "publicIP": {"name": "pip-c1-apiserver"}}],
               "backendPool": {"name": "c1-public-lb-backendPool"}})
    );
    // IPv4 nodes go out through the NAT gateway, so no node outbound load balancer.
    assert!(spec["networkSpec"].get("nodeOutboundLB").is_none());
    assert!(
        c.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );

    let mut again = c.clone();
    again
        .default(&ctx(Operation::Update, Features::default()))
        .unwrap();
    assert_eq!(spec_json(&again), spec_json(&c), "defaulting is idempotent");
}

/// CAPZ `setDefaultAzureClusterResourceGroup`: the AzureCluster's own name, not its Cluster's.
#[test]
fn the_resource_group_is_the_azure_clusters_name() {
    let mut c = cluster(json!({}));
    c.metadata.labels = Some([("cluster.x-k8s.io/cluster-name".to_owned(), "workload".to_owned())].into());
    c.default(&ctx(Operation::Create, Features::default())).unwrap();
    assert_eq!(c.spec.resource_group.as_deref(), Some("c1"));
}

#[test]
fn an_internal_api_server_gets_a_private_frontend_and_no_outbound_lb() {
    let c = defaulted(
        json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}}),
        Features::default(),
    );
    let lb = &spec_json(&c)["networkSpec"]["apiServerLB"];
    assert_eq!(lb["name"], "c1-internal-lb");
    assert_eq!(
        lb["frontendIPs"],
        json!([{"name": "c1-internal-lb-frontEnd", "privateIP": "10.0.0.100"}])
    );
    assert!(c.spec.network_spec.as_ref().unwrap().node_outbound_lb.is_none());
}

#[test]
fn the_api_server_ilb_gate_adds_an_internal_frontend() {
    let features = Features {
        api_server_ilb: true,
        ..Features::default()
    };
    let c = defaulted(json!({}), features);
    let frontends = &spec_json(&c)["networkSpec"]["apiServerLB"]["frontendIPs"];
    assert_eq!(
        frontends[1],
        json!({"name": "c1-public-lb-frontEnd-internal-ip", "privateIP": "10.0.0.100"})
    );
    assert!(c.validate_create(&ctx(Operation::Create, features)).allowed());
    // Without the gate the same private frontend is refused.
    assert_eq!(
        errors(&c.validate_create(&ctx(Operation::Create, Features::default()))),
        [
            "spec.networkSpec.apiServerLB.frontendIPs[1].privateIP: Forbidden: a Public load balancer has no private IP unless the APIServerILB feature gate is on"
        ]
    );
}

#[test]
fn ipv6_and_dual_stack_nodes_get_an_outbound_lb_instead_of_a_nat_gateway() {
    let c = defaulted(
        json!({"networkSpec": {
        "vnet": {"name": "vnet", "cidrBlocks": ["10.0.0.0/8", "2001:1234:5678:9a00::/56"]},
        "subnets": [
            {"name": "cp", "role": "control-plane", "cidrBlocks": ["10.0.0.0/16", "2001:1234:5678:9abc::/64"]},
            {"name": "nodes", "role": "node", "cidrBlocks": ["10.1.0.0/16", "2001:1234:5678:9abd::/64"]},
        ]}}),
        Features::default(),
    );
    let spec = spec_json(&c);
    let nodes = &spec["networkSpec"]["subnets"][1];
    assert!(nodes.get("natGateway").is_none(), "{nodes}");
    assert_eq!(
        spec["networkSpec"]["nodeOutboundLB"],
        json!({"name": "c1", "type": "Public", "sku": "Standard", "idleTimeoutInMinutes": 4, "frontendIPsCount": 1,
               "frontendIPs": [{"name": "c1-frontEnd", "publicIP": {"name": "pip-c1-node-outbound"}}],
               "backendPool": {"name": "c1-outboundBackendPool"}})
    );
    assert!(
        c.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );
}

#[test]
fn outbound_frontends_follow_their_count() {
    let c = defaulted(
        json!({"networkSpec": {"apiServerLB": {"type": "Internal"}, "controlPlaneOutboundLB": {"frontendIPsCount": 2}}}),
        Features::default(),
    );
    let lb = &spec_json(&c)["networkSpec"]["controlPlaneOutboundLB"];
    assert_eq!(lb["name"], "c1-outbound-lb");
    assert_eq!(
        lb["frontendIPs"],
        json!([
            {"name": "c1-outbound-lb-frontEnd-1", "publicIP": {"name": "pip-c1-controlplane-outbound-1"}},
            {"name": "c1-outbound-lb-frontEnd-2", "publicIP": {"name": "pip-c1-controlplane-outbound-2"}},
        ])
    );
}

#[test]
fn node_subnets_are_numbered_and_a_cluster_subnet_replaces_both_roles() {
    let c = defaulted(
        json!({"networkSpec": {"subnets": [
            {"name": "a", "role": "node"}, {"name": "b", "role": "node", "id": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/b"},
        ]}}),
        Features::default(),
    );
    let subnets = &spec_json(&c)["networkSpec"]["subnets"];
    assert_eq!(subnets[0]["cidrBlocks"], json!(["10.1.0.0/16"]));
    assert_eq!(subnets[0]["natGateway"]["name"], "c1-node-natgw-1");
    assert_eq!(subnets[1]["cidrBlocks"], json!(["10.2.0.0/16"]));
    assert!(
        subnets[1].get("natGateway").is_none(),
        "a subnet that exists keeps its own outbound path"
    );
    assert_eq!(subnets[2]["role"], "control-plane");

    let c = defaulted(
        json!({"networkSpec": {"subnets": [{"name": "", "role": "cluster"}]}}),
        Features::default(),
    );
    let subnets = &spec_json(&c)["networkSpec"]["subnets"];
    assert_eq!(subnets.as_array().unwrap().len(), 1);
    assert_eq!(subnets[0]["name"], "c1-subnet");
    assert_eq!(
        subnets[0]["natGateway"],
        json!({"name": "c1-natgw", "ip": {"name": "pip-c1-natgw"}})
    );
    assert!(
        c.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );
}

#[test]
fn an_empty_bastion_gets_names_and_its_subnet() {
    let c = defaulted(json!({"bastionSpec": {"azureBastion": {}}}), Features::default());
    let bastion = &spec_json(&c)["bastionSpec"]["azureBastion"];
    assert_eq!(bastion["name"], "c1-azure-bastion");
    assert_eq!(
        bastion["subnet"],
        json!({"name": "AzureBastionSubnet", "role": "bastion", "cidrBlocks": ["10.255.255.224/27"]})
    );
    assert_eq!(bastion["publicIP"]["name"], "c1-azure-bastion-pip");
    assert!(
        c.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );
}

#[test]
fn an_externally_managed_control_plane_has_no_api_server_lb() {
    let c = defaulted(
        json!({"controlPlaneEnabled": false, "networkSpec": {"apiServerLB": {"type": "Public"}}}),
        Features::default(),
    );
    assert!(c.spec.network_spec.as_ref().unwrap().api_server_lb.is_none());
    assert!(
        c.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );
}

/// One manifest per rule and the one error it must produce.
#[test]
fn each_rule_names_the_field_and_the_fix() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "identity required",
            json!({"identityRef": null}),
            "spec.identityRef: Required value: reference the AzureClusterIdentity",
        ),
        (
            "identity kind",
            json!({"identityRef": {"kind": "Secret", "name": "x"}}),
            r#"spec.identityRef.kind: Unsupported value: "Secret": supported values: "AzureClusterIdentity""#,
        ),
        (
            "edge zone gated",
            json!({"extendedLocation": {"name": "losangeles", "type": "EdgeZone"}}),
            "spec.extendedLocation: Forbidden: edge zones need the EdgeZone feature gate",
        ),
        (
            "resource group",
            json!({"resourceGroup": "my rg"}),
            r#"spec.resourceGroup: Invalid value: "my rg": a resource group name has 1 to 90"#,
        ),
        (
            "vnet cidr",
            json!({"networkSpec": {"vnet": {"name": "vnet", "cidrBlocks": ["10.0.0.0/33"]}}}),
            r#"spec.networkSpec.vnet.cidrBlocks[0]: Invalid value: "10.0.0.0/33": "10.0.0.0/33" is not an address range"#,
        ),
        (
            "vnet name",
            json!({"networkSpec": {"vnet": {"name": "-v"}}}),
            r#"spec.networkSpec.vnet.name: Invalid value: "-v": Azure needs 2 to 64"#,
        ),
        (
            "subnet outside vnet",
            json!({"networkSpec": {"subnets": [
            {"name": "cp", "role": "control-plane", "cidrBlocks": ["192.168.0.0/24"]}, {"name": "n", "role": "node"}]}}),
            r#"spec.networkSpec.subnets[0].cidrBlocks[0]: Invalid value: "192.168.0.0/24": the subnet must lie inside the virtual network's address space 10.0.0.0/8"#,
        ),
        (
            "subnets overlap",
            json!({"networkSpec": {"subnets": [
            {"name": "cp", "role": "control-plane", "cidrBlocks": ["10.0.0.0/16"]}, {"name": "n", "role": "node", "cidrBlocks": ["10.0.128.0/24"]}]}}),
            r#"spec.networkSpec.subnets[1].cidrBlocks[0]: Invalid value: "10.0.128.0/24": overlaps subnet "cp""#,
        ),
        (
            "ipv6 subnet size",
            json!({"networkSpec": {"vnet": {"name": "vnet", "cidrBlocks": ["10.0.0.0/8", "2001:db8::/56"]}, "subnets": [
            {"name": "cp", "role": "control-plane"}, {"name": "n", "role": "node", "cidrBlocks": ["10.1.0.0/16", "2001:db8::/80"]}]}}),
            r#"spec.networkSpec.subnets[1].cidrBlocks[1]: Invalid value: "2001:db8::/80": Azure IPv6 subnets are /64 ranges"#,
        ),
        (
            "subnet name",
            json!({"networkSpec": {"subnets": [{"name": "c p", "role": "control-plane"}, {"name": "n", "role": "node"}]}}),
            r#"spec.networkSpec.subnets[0].name: Invalid value: "c p": Azure needs 1 to 80"#,
        ),
        (
            "rule priority",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "securityGroup": {"name": "g", "securityRules": [
            {"name": "r", "description": "d", "protocol": "Tcp", "direction": "Inbound", "priority": 50}]}}, {"name": "n", "role": "node"}]}}),
            "spec.networkSpec.subnets[0].securityGroup.securityRules[0].priority: Invalid value: 50: Azure takes priorities from 100 to 4096",
        ),
        (
            "rule priority clash",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "securityGroup": {"name": "g", "securityRules": [
            {"name": "a", "description": "d", "protocol": "Tcp", "direction": "Inbound", "priority": 200},
            {"name": "b", "description": "d", "protocol": "Tcp", "direction": "Inbound", "priority": 200}]}}, {"name": "n", "role": "node"}]}}),
            "spec.networkSpec.subnets[0].securityGroup.securityRules[1].priority: Invalid value: 200: another rule of the same direction",
        ),
        (
            "rule source and sources",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "securityGroup": {"name": "g", "securityRules": [
            {"name": "a", "description": "d", "protocol": "Tcp", "direction": "Inbound", "priority": 200, "source": "*", "sources": ["10.0.0.0/8"]}]}}, {"name": "n", "role": "node"}]}}),
            "spec.networkSpec.subnets[0].securityGroup.securityRules[0].sources: Forbidden: set either source or sources, not both",
        ),
        (
            "rule ports",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "securityGroup": {"name": "g", "securityRules": [
            {"name": "a", "description": "d", "protocol": "Tcp", "direction": "Inbound", "priority": 200, "destinationPorts": "70000"}]}}, {"name": "n", "role": "node"}]}}),
            r#"spec.networkSpec.subnets[0].securityGroup.securityRules[0].destinationPorts: Invalid value: "70000": use *, a port"#,
        ),
        (
            "service endpoint",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "serviceEndpoints": [
            {"service": "Storage", "locations": ["westeurope"]}]}, {"name": "n", "role": "node"}]}}),
            r#"spec.networkSpec.subnets[0].serviceEndpoints[0].service: Invalid value: "Storage": name an Azure service endpoint"#,
        ),
        (
            "service endpoint location",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "serviceEndpoints": [
            {"service": "Microsoft.Storage", "locations": ["West Europe"]}]}, {"name": "n", "role": "node"}]}}),
            r#"spec.networkSpec.subnets[0].serviceEndpoints[0].locations[0]: Invalid value: "West Europe": use a region name"#,
        ),
        (
            "private endpoint connection",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "privateEndpoints": [
            {"name": "pe"}]}, {"name": "n", "role": "node"}]}}),
            "spec.networkSpec.subnets[0].privateEndpoints[0].privateLinkServiceConnections: Required value",
        ),
        (
            "private endpoint ip",
            json!({"networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "privateEndpoints": [
            {"name": "pe", "privateIPAddresses": ["10.1.0.5"], "privateLinkServiceConnections": [{"privateLinkServiceID": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/a"}]}]},
            {"name": "n", "role": "node"}]}}),
            r#"spec.networkSpec.subnets[0].privateEndpoints[0].privateIPAddresses[0]: Invalid value: "10.1.0.5": the address must lie in the subnet's range"#,
        ),
        (
            "lb sku",
            json!({"networkSpec": {"apiServerLB": {"sku": "Basic"}}}),
            r#"spec.networkSpec.apiServerLB.sku: Unsupported value: "Basic": supported values: "Standard""#,
        ),
        (
            "lb type",
            json!({"networkSpec": {"apiServerLB": {"type": "Private"}}}),
            r#"spec.networkSpec.apiServerLB.type: Unsupported value: "Private""#,
        ),
        (
            "lb idle timeout",
            json!({"networkSpec": {"apiServerLB": {"idleTimeoutInMinutes": 31}}}),
            "spec.networkSpec.apiServerLB.idleTimeoutInMinutes: Invalid value: 31: Azure takes idle timeouts from 4 to 30 minutes",
        ),
        (
            "internal lb ip outside cp subnet",
            json!({"networkSpec": {"apiServerLB": {"type": "Internal", "frontendIPs": [{"name": "f", "privateIP": "10.1.0.100"}]}}}),
            r#"spec.networkSpec.apiServerLB.frontendIPs[0].privateIP: Invalid value: "10.1.0.100": the private IP must be a free address in the control-plane subnet (10.0.0.0/16)"#,
        ),
        (
            "internal lb public ip",
            json!({"networkSpec": {"apiServerLB": {"type": "Internal", "frontendIPs": [{"name": "f", "privateIP": "10.0.0.5", "publicIP": {"name": "p"}}]}}}),
            "spec.networkSpec.apiServerLB.frontendIPs[0].publicIP: Forbidden: an Internal load balancer has no public IP",
        ),
        (
            "public lb two public ips",
            json!({"networkSpec": {"apiServerLB": {"frontendIPs": [{"name": "a", "publicIP": {"name": "p"}}, {"name": "b", "publicIP": {"name": "q"}}]}}}),
            "spec.networkSpec.apiServerLB.frontendIPs: Invalid value: 2: a Public API server load balancer has exactly one frontend",
        ),
        (
            "public ip dns name",
            json!({"networkSpec": {"apiServerLB": {"frontendIPs": [{"name": "a", "publicIP": {"name": "p", "dnsName": "1abc.westeurope.cloudapp.azure.com"}}]}}}),
            "spec.networkSpec.apiServerLB.frontendIPs[0].publicIP.dnsName: Invalid value",
        ),
        (
            "outbound count",
            json!({"networkSpec": {"nodeOutboundLB": {"frontendIPsCount": 17},
                "vnet": {"name": "vnet1", "cidrBlocks": ["10.0.0.0/8", "2001:db8::/56"]},
                "subnets": [{"name": "n", "role": "node", "cidrBlocks": ["10.1.0.0/16", "2001:db8::/64"]}]}}),
            "spec.networkSpec.nodeOutboundLB.frontendIPsCount: Invalid value: 17: an outbound load balancer has 0 to 16 public IPs",
        ),
        (
            "cp outbound with public api server",
            json!({"networkSpec": {"controlPlaneOutboundLB": {}}}),
            "spec.networkSpec.controlPlaneOutboundLB: Forbidden: a public API server load balancer already gives",
        ),
        (
            "private dns needs internal",
            json!({"networkSpec": {"privateDNSZoneName": "c1.capz.io"}}),
            r#"spec.networkSpec.privateDNSZoneName: Invalid value: "c1.capz.io": a private DNS zone serves an Internal API server load balancer only"#,
        ),
        (
            "private dns name",
            json!({"networkSpec": {"apiServerLB": {"type": "Internal"}, "privateDNSZoneName": "-c1.zone"}}),
            r#"spec.networkSpec.privateDNSZoneName: Invalid value: "-c1.zone": must be a DNS name"#,
        ),
        (
            "private dns group alone",
            json!({"networkSpec": {"privateDNSZoneResourceGroup": "g"}}),
            r#"spec.networkSpec.privateDNSZoneResourceGroup: Invalid value: "g": set privateDNSZoneName too"#,
        ),
        (
            "bastion tunneling",
            json!({"bastionSpec": {"azureBastion": {"enableTunneling": true}}}),
            r#"spec.bastionSpec.azureBastion.sku: Invalid value: "Basic": native client tunneling (enableTunneling) needs the Standard SKU"#,
        ),
        (
            "bastion subnet name",
            json!({"bastionSpec": {"azureBastion": {"subnet": {"name": "bastion", "role": "bastion"}}}}),
            r#"spec.bastionSpec.azureBastion.subnet.name: Invalid value: "bastion": Azure Bastion only works in a subnet named AzureBastionSubnet"#,
        ),
        (
            "too many tags",
            json!({"additionalTags": (0..48).map(|i| (format!("t{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}),
            "spec.additionalTags: Invalid value: 48: Azure allows 50 tags per resource",
        ),
    ];
    for (name, spec, expected) in cases {
        let found = create_errors(spec, Features::default());
        assert!(
            found.len() == 1 && found[0].starts_with(expected),
            "{name}: expected one error starting {expected:?}, got {found:#?}"
        );
    }
}

#[test]
fn roles_are_required_when_defaulting_did_not_run() {
    // Defaulting adds the missing roles, so only an object that skipped it can lack them.
    let c = cluster(
        json!({"networkSpec": {"subnets": [{"name": "b", "role": "bastion", "cidrBlocks": ["10.9.0.0/16"]}]}}),
    );
    assert_eq!(
        errors(&c.validate_create(&ctx(Operation::Create, Features::default()))),
        [
            r#"spec.networkSpec.subnets: Required value: add a subnet with role "node" (or one with role "cluster" for all machines)"#,
            r#"spec.networkSpec.subnets: Required value: add a subnet with role "control-plane" (or one with role "cluster" for all machines)"#,
        ]
    );
}

#[test]
fn the_cluster_name_is_checked() {
    for (name, fragment) in [
        ("a".repeat(45), "must be at most 44 characters"),
        (
            "My-cluster".to_owned(),
            "must be lower-case letters, digits and '-'",
        ),
        ("cluster-".to_owned(), "must be lower-case letters"),
    ] {
        let mut c = cluster(json!({}));
        c.metadata.name = Some(name.clone());
        c.default(&ctx(Operation::Create, Features::default())).unwrap();
        let found = errors(&c.validate_create(&ctx(Operation::Create, Features::default())));
        assert!(
            found
                .iter()
                .any(|e| e.starts_with("metadata.name: Invalid value") && e.contains(fragment)),
            "{name}: {found:#?}"
        );
    }
}

#[test]
fn identity_and_placement_cannot_change() {
    let old = defaulted(
        json!({"controlPlaneEndpoint": {"host": "api.example.com", "port": 6443}}),
        Features::default(),
    );
    let update = |patch: Value| -> Vec<String> {
        let mut new = serde_json::to_value(&old).unwrap();
        merge(&mut new["spec"], patch);
        let mut new: AzureCluster = serde_json::from_value(new).unwrap();
        new.default(&ctx(Operation::Update, Features::default())).unwrap();
        errors(&new.validate_update(&old, &ctx(Operation::Update, Features::default())))
    };
    assert!(
        update(json!({"additionalTags": {"team": "a"}})).is_empty(),
        "tags may change"
    );
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"location": "northeurope"}),
            r#"spec.location: Invalid value: "northeurope": field is immutable"#,
        ),
        (
            json!({"subscriptionID": "11111111-1111-1111-1111-111111111111"}),
            "spec.subscriptionID: Invalid value",
        ),
        (
            json!({"resourceGroup": "other"}),
            r#"spec.resourceGroup: Invalid value: "other": field is immutable"#,
        ),
        (
            json!({"azureEnvironment": "AzureChinaCloud"}),
            "spec.azureEnvironment: Invalid value",
        ),
        (
            json!({"controlPlaneEndpoint": {"host": "other.example.com"}}),
            "spec.controlPlaneEndpoint.host: Invalid value",
        ),
        (
            json!({"controlPlaneEndpoint": {"port": 443}}),
            "spec.controlPlaneEndpoint.port: Invalid value: 443: field is immutable",
        ),
        (
            json!({"cloudProviderConfigOverrides": {"rateLimits": [{"name": "defaultRateLimit"}]}}),
            "spec.cloudProviderConfigOverrides: Invalid value",
        ),
        (
            json!({"networkSpec": {"vnet": {"name": "other-vnet"}}}),
            r#"spec.networkSpec.vnet.name: Invalid value: "other-vnet": field is immutable"#,
        ),
        (
            json!({"networkSpec": {"apiServerLB": {"name": "lb2"}}}),
            r#"spec.networkSpec.apiServerLB.name: Invalid value: "lb2": field is immutable"#,
        ),
        (
            json!({"networkSpec": {"apiServerLB": {"idleTimeoutInMinutes": 10}}}),
            "spec.networkSpec.apiServerLB.idleTimeoutInMinutes: Invalid value: 10: field is immutable",
        ),
        (
            json!({"networkSpec": {"privateDNSZoneName": "x.io"}}),
            "spec.networkSpec.privateDNSZoneName: Invalid value",
        ),
    ];
    for (patch, expected) in cases {
        let found = update(patch.clone());
        assert!(
            found.iter().any(|e| e.starts_with(expected)),
            "{patch}: expected {expected:?} in {found:#?}"
        );
    }

    // Subnets are matched by name; their ranges and attached resources stay.
    let mut new = old.clone();
    let subnets = &mut new
        .spec
        .network_spec
        .as_mut()
        .unwrap()
        .subnets
        .as_mut()
        .unwrap()
        .0;
    subnets[1].class.cidr_blocks = Some(vec!["10.2.0.0/16".to_owned()]);
    subnets[1].route_table.as_mut().unwrap().name = "rt2".to_owned();
    let found = errors(&new.validate_update(&old, &ctx(Operation::Update, Features::default())));
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("spec.networkSpec.subnets[1].cidrBlocks: Invalid value")),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|e| e.starts_with(
            r#"spec.networkSpec.subnets[1].routeTable.name: Invalid value: "rt2": field is immutable"#
        )),
        "{found:#?}"
    );

    // A bastion may be added later, but not changed afterwards.
    let mut with_bastion = old.clone();
    with_bastion.spec.bastion_spec = Some(BastionSpec::default());
    with_bastion.spec.bastion_spec.as_mut().unwrap().azure_bastion = Some(AzureBastion::default());
    with_bastion
        .default(&ctx(Operation::Update, Features::default()))
        .unwrap();
    assert!(
        with_bastion
            .validate_update(&old, &ctx(Operation::Update, Features::default()))
            .allowed()
    );
    let mut renamed = with_bastion.clone();
    renamed
        .spec
        .bastion_spec
        .as_mut()
        .unwrap()
        .azure_bastion
        .as_mut()
        .unwrap()
        .name = Some("b2".to_owned());
    assert!(
        errors(&renamed.validate_update(&with_bastion, &ctx(Operation::Update, Features::default())))
            .iter()
            .any(|e| e.starts_with("spec.bastionSpec.azureBastion: Invalid value"))
    );
}

fn template(spec: &Value) -> AzureClusterTemplate {
    serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterTemplate",
        "metadata": {"name": "t1", "namespace": "default"},
        "spec": {"template": {"spec": spec}},
    }))
    .unwrap()
}

/// CAPZ `validateSubnetTemplates`: a template names its control-plane and node subnets itself.
#[test]
fn a_template_without_its_subnets_is_refused() {
    let mut t = template(
        &json!({"location": "westeurope", "identityRef": {"kind": "AzureClusterIdentity", "name": "i"},
                "networkSpec": {"subnets": [{"name": "all", "role": "cluster"}]}}),
    );
    t.default(&ctx(Operation::Create, Features::default())).unwrap();
    let refused = errors(&t.validate_create(&ctx(Operation::Create, Features::default())));
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused
            .iter()
            .all(|e| e.starts_with("spec.template.spec.networkSpec.subnets: Required value")),
        "{refused:?}"
    );
}

#[test]
fn a_template_gets_what_does_not_depend_on_a_cluster_name() {
    let mut t = template(
        &json!({"location": "westeurope", "identityRef": {"kind": "AzureClusterIdentity", "name": "i"},
                "networkSpec": {"subnets": [{"name": "cp", "role": "control-plane"}, {"name": "n", "role": "node"}]}}),
    );
    t.default(&ctx(Operation::Create, Features::default())).unwrap();
    let spec = serde_json::to_value(&t.spec.template.spec).unwrap();
    assert_eq!(spec["networkSpec"]["vnet"], json!({"cidrBlocks": ["10.0.0.0/8"]}));
    assert_eq!(
        spec["networkSpec"]["subnets"],
        json!([
            {"name": "cp", "role": "control-plane", "cidrBlocks": ["10.0.0.0/16"]},
            {"name": "n", "role": "node", "cidrBlocks": ["10.1.0.0/16"]},
        ])
    );
    assert_eq!(
        spec["networkSpec"]["apiServerLB"],
        json!({"type": "Public", "sku": "Standard", "idleTimeoutInMinutes": 4})
    );
    assert!(
        t.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );
    assert_eq!(
        t.spec
            .template
            .spec
            .network_spec
            .as_ref()
            .unwrap()
            .subnets
            .as_ref()
            .unwrap()
            .0[0]
            .class
            .role,
        SubnetRole::ControlPlane
    );
}

#[test]
fn a_template_is_checked_under_its_template_path_and_never_changes() {
    let mut t = template(
        &json!({"location": "westeurope", "identityRef": {"kind": "AzureClusterIdentity", "name": "i"},
        "networkSpec": {"subnets": [{"name": "cp", "role": "control-plane", "cidrBlocks": ["172.16.0.0/24"]}, {"name": "n", "role": "node"}]}}),
    );
    t.default(&ctx(Operation::Create, Features::default())).unwrap();
    assert_eq!(
        errors(&t.validate_create(&ctx(Operation::Create, Features::default()))),
        [
            r#"spec.template.spec.networkSpec.subnets[0].cidrBlocks[0]: Invalid value: "172.16.0.0/24": the subnet must lie inside the virtual network's address space 10.0.0.0/8"#
        ]
    );

    let mut old = template(
        &json!({"location": "westeurope", "identityRef": {"kind": "AzureClusterIdentity", "name": "i"},
                "networkSpec": {"subnets": [{"name": "cp", "role": "control-plane"}, {"name": "n", "role": "node"}]}}),
    );
    // Stored before defaulting: the comparison defaults it first, so re-applying the same
    // manifest is no change.
    let mut same = old.clone();
    same.default(&ctx(Operation::Update, Features::default()))
        .unwrap();
    assert!(
        same.validate_update(&old, &ctx(Operation::Update, Features::default()))
            .allowed()
    );

    old.default(&ctx(Operation::Create, Features::default())).unwrap();
    let mut moved = old.clone();
    moved.spec.template.spec.class.location = "northeurope".to_owned();
    assert_eq!(
        errors(&moved.validate_update(&old, &ctx(Operation::Update, Features::default()))),
        [
            "spec.template.spec: Forbidden: AzureClusterTemplate spec.template.spec field is immutable: create a new template and point the ClusterClass at it"
        ]
    );
    // Cluster API's topology controller dry-runs its templates; that request passes.
    moved.metadata.annotations =
        Some([("topology.cluster.x-k8s.io/dry-run".to_owned(), String::new())].into());
    let dry_run = Context {
        dry_run: true,
        ..ctx(Operation::Update, Features::default())
    };
    assert!(moved.validate_update(&old, &dry_run).allowed());
}

#[test]
fn default_subnet_ranges_fall_inside_a_custom_address_space() {
    let c = defaulted(
        json!({"networkSpec": {"vnet": {"name": "vnet", "cidrBlocks": ["172.16.0.0/16"]},
            "subnets": [{"name": "n1", "role": "node"}, {"name": "n2", "role": "node"}]},
            "bastionSpec": {"azureBastion": {}}}),
        Features::default(),
    );
    let spec = spec_json(&c);
    let ranges: Vec<&Value> = spec["networkSpec"]["subnets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["cidrBlocks"][0])
        .collect();
    assert_eq!(
        ranges,
        [
            &json!("172.16.1.0/24"),
            &json!("172.16.2.0/24"),
            &json!("172.16.0.0/24")
        ]
    );
    assert_eq!(
        spec["bastionSpec"]["azureBastion"]["subnet"]["cidrBlocks"],
        json!(["172.16.255.224/27"])
    );
    assert!(
        c.validate_create(&ctx(Operation::Create, Features::default()))
            .allowed()
    );
}

/// CAPZ's `validateVnetPeerings`: a second peering to the same network (resource group, defaulted
/// to the cluster's, and name) is refused at the list.
#[test]
fn a_second_peering_to_the_same_network_is_refused() {
    let peerings = |list: Value| json!({"networkSpec": {"vnet": {"name": "c1-vnet", "peerings": list}}});
    assert_eq!(
        create_errors(
            peerings(json!([{"remoteVnetName": "hub"}, {"remoteVnetName": "hub", "resourceGroup": "c1"}])),
            Features::default()
        ),
        [r#"spec.networkSpec.vnet.peerings: Duplicate value: "c1/hub""#]
    );
    // The same network name in another group is another network.
    assert!(
        create_errors(
            peerings(
                json!([{"remoteVnetName": "hub"}, {"remoteVnetName": "hub", "resourceGroup": "shared"}])
            ),
            Features::default()
        )
        .is_empty()
    );
}
