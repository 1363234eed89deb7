//! The SSH inbound NAT rule of a control-plane machine
//! (`Microsoft.Network/loadBalancers/inboundNatRules`), as CAPZ lays it out: behind a public API
//! server load balancer, each control-plane machine gets a rule named after its AzureMachine that
//! forwards a TCP port of the balancer's first frontend to port 22 of the machine, so that a person
//! reaches the control plane with SSH on the API server's address.
//!
//! The frontend port is 22 while no rule of the balancer uses it, else the first free one of
//! 2201 to 2219. A rule that exists keeps its port: it is never written again.
//!
//! The rule takes no tags: it is ours because the balancer is and its name is the machine's. The
//! loadbalancer controller creates and deletes it; compute joins the machine's interface to it.
//! Both ask [`gets_rule`] which machines have one, so they never disagree.

use std::ops::RangeInclusive;

use capz_api::AzureCluster;
use capz_azure::models::SubResource;
use capz_azure::models::network::{
    InboundNatRule as Model, InboundNatRuleProperties, LoadBalancer, TransportProtocol,
};
use capz_azure::models::{ChildResource, id_of};
use capz_azure::{IdError, ResourceId};
use capz_kit::cluster::is_externally_managed;
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_rules::azurecluster::LB_PUBLIC;
use capz_rules::names;

/// The port SSH listens on, on the machine and, for the first machine, on the balancer.
pub const SSH_PORT: u16 = 22;
/// The frontend ports of the other machines' rules, taken in order.
pub const ALTERNATIVE_PORTS: RangeInclusive<u16> = 2201..=2219;
/// How long an idle SSH flow is kept.
const IDLE_TIMEOUT_MINUTES: u32 = 4;

/// Where the SSH rules of a cluster sit: its public API server load balancer and the first
/// frontend of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiServerFrontend {
    /// The API server load balancer.
    pub load_balancer: ResourceId,
    /// Its first public frontend.
    pub frontend: ResourceId,
}

impl ApiServerFrontend {
    /// The public API server load balancer of `scope`'s (defaulted) spec and its first public
    /// frontend; `None` when the API server balancer is internal, or there is none.
    ///
    /// # Errors
    /// When the balancer's or frontend's name is not a valid Azure name.
    pub fn of(scope: &ClusterScope) -> Result<Option<Self>, IdError> {
        let Some(lb) = scope
            .spec
            .network_spec
            .as_ref()
            .and_then(|network| network.api_server_lb.as_ref())
            .filter(|lb| {
                lb.class
                    .type_
                    .as_deref()
                    .is_none_or(|kind| kind.eq_ignore_ascii_case(LB_PUBLIC))
            })
        else {
            return Ok(None);
        };
        let Some(frontend) = lb
            .frontend_ips
            .iter()
            .flatten()
            .find(|frontend| frontend.public_ip.is_some())
        else {
            return Ok(None);
        };
        let name = lb
            .name
            .clone()
            .unwrap_or_else(|| names::public_load_balancer(&scope.name));
        let load_balancer = scope.id_of::<LoadBalancer>(&name)?;
        let frontend = load_balancer.child("frontendIPConfigurations", &frontend.name)?;
        Ok(Some(Self {
            load_balancer,
            frontend,
        }))
    }
}

/// Whether a machine of the cluster of `azure_cluster` (read with its defaults as `scope`) gets
/// an SSH rule: it belongs to the control plane, the API server load balancer is public, and the
/// cluster is not managed by someone else (whose load balancer is not ours to change).
#[must_use]
pub fn gets_rule(azure_cluster: &AzureCluster, scope: &ClusterScope, control_plane: bool) -> bool {
    control_plane
        && !is_externally_managed(azure_cluster)
        && matches!(ApiServerFrontend::of(scope), Ok(Some(_)))
}

/// The frontend port of `machine`'s rule among the balancer's `rules`: the port of its own rule
/// when it exists, else 22 when no rule uses it, else the first free one of 2201 to 2219; `None`
/// when all are taken.
#[must_use]
pub fn frontend_port(rules: &[Model], machine: &str) -> Option<u16> {
    let is_own = |rule: &Model| {
        rule.name
            .as_deref()
            .is_some_and(|name| name.eq_ignore_ascii_case(machine))
    };
    let port = |rule: &Model| {
        rule.properties
            .as_ref()
            .and_then(|properties| properties.frontend_port)
    };
    if let Some(own) = rules.iter().filter(|rule| is_own(rule)).find_map(port) {
        return Some(own);
    }
    let taken: Vec<u16> = rules
        .iter()
        .filter(|rule| !is_own(rule))
        .filter_map(port)
        .collect();
    std::iter::once(SSH_PORT)
        .chain(ALTERNATIVE_PORTS)
        .find(|candidate| !taken.contains(candidate))
}

/// The SSH rule of one control-plane machine.
#[derive(Debug, Clone)]
pub struct InboundNatRule {
    id: ResourceId,
    frontend: ResourceId,
    frontend_port: u16,
}

impl InboundNatRule {
    /// The rule of the machine `machine` on `target`, received on port 22 unless
    /// [`Self::frontend_port`] says otherwise.
    ///
    /// # Errors
    /// When `machine` is not a valid rule name.
    pub fn new(target: &ApiServerFrontend, machine: &str) -> Result<Self, IdError> {
        Ok(Self {
            id: id_of::<Model>(&target.load_balancer, machine)?,
            frontend: target.frontend.clone(),
            frontend_port: SSH_PORT,
        })
    }

    /// Received on `port` (see [`frontend_port`]).
    #[must_use]
    pub fn frontend_port(mut self, port: u16) -> Self {
        self.frontend_port = port;
        self
    }
}

impl AzureResource for InboundNatRule {
    type Model = Model;
    const SERVICE: &'static str = "inboundnatrules";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        // Changing the port of an existing rule would break the SSH access people already use.
        if existing.is_some() {
            return None;
        }
        Some(ChildResource {
            properties: Some(InboundNatRuleProperties {
                frontend_ip_configuration: Some(SubResource::from(self.frontend.clone())),
                protocol: Some(TransportProtocol::Tcp),
                frontend_port: Some(self.frontend_port),
                backend_port: Some(SSH_PORT),
                idle_timeout_in_minutes: Some(IDLE_TIMEOUT_MINUTES),
                enable_floating_ip: Some(false),
                ..InboundNatRuleProperties::default()
            }),
            ..ChildResource::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{TEST_SUBSCRIPTION, test_scope};

    fn azure_cluster(annotations: &serde_json::Value) -> AzureCluster {
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default", "annotations": annotations},
            "spec": {"location": "westeurope", "subscriptionID": TEST_SUBSCRIPTION},
        }))
        .unwrap()
    }

    fn rule(name: &str, port: u16) -> Model {
        serde_json::from_value(json!({"name": name, "properties": {"frontendPort": port, "backendPort": 22}}))
            .unwrap()
    }

    #[test]
    fn only_control_plane_machines_behind_a_public_api_server_of_our_own_get_a_rule() {
        let cluster = azure_cluster(&json!({}));
        let public = test_scope(&json!({}));
        assert!(gets_rule(&cluster, &public, true));
        assert!(!gets_rule(&cluster, &public, false), "a worker");
        let internal = test_scope(&json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}}));
        assert!(!gets_rule(&cluster, &internal, true), "an internal API server");
        let no_control_plane = test_scope(&json!({"controlPlaneEnabled": false}));
        assert!(
            !gets_rule(&cluster, &no_control_plane, true),
            "no API server balancer"
        );
        let managed = azure_cluster(&json!({"cluster.x-k8s.io/managed-by": "someone"}));
        assert!(
            !gets_rule(&managed, &public, true),
            "an externally managed cluster"
        );
    }

    #[test]
    fn the_first_rule_takes_22_and_the_next_ones_the_first_free_alternative() {
        assert_eq!(frontend_port(&[], "cp-0"), Some(22));
        assert_eq!(frontend_port(&[rule("cp-0", 22)], "cp-1"), Some(2201));
        assert_eq!(
            frontend_port(&[rule("cp-0", 22), rule("cp-1", 2201)], "cp-2"),
            Some(2202)
        );
        // A port freed by a deleted machine is taken again, 22 first.
        assert_eq!(frontend_port(&[rule("cp-1", 2201)], "cp-2"), Some(22));
        assert_eq!(
            frontend_port(&[rule("cp-0", 22), rule("cp-2", 2202)], "cp-3"),
            Some(2201)
        );
        // The machine's own rule keeps its port, whatever others use.
        assert_eq!(
            frontend_port(&[rule("cp-0", 22), rule("CP-1", 2207)], "cp-1"),
            Some(2207)
        );
    }

    #[test]
    fn no_port_is_left_once_22_and_2201_to_2219_are_taken() {
        let mut rules = vec![rule("cp-0", 22)];
        rules.extend(ALTERNATIVE_PORTS.map(|port| rule(&format!("cp-{port}"), port)));
        assert_eq!(rules.len(), 20);
        assert_eq!(frontend_port(&rules, "cp-new"), None);
        assert_eq!(frontend_port(&rules[1..], "cp-new"), Some(22));
    }

    #[test]
    fn a_new_rule_forwards_its_port_on_the_first_frontend_to_ssh_and_an_existing_one_is_not_written() {
        let target = ApiServerFrontend::of(&test_scope(&json!({}))).unwrap().unwrap();
        let lb = format!(
            "/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Network/loadBalancers/c1-public-lb"
        );
        assert_eq!(target.load_balancer.to_string(), lb);
        let wanted = InboundNatRule::new(&target, "c1-control-plane-abc")
            .unwrap()
            .frontend_port(2201);
        assert_eq!(
            wanted.id().to_string(),
            format!("{lb}/inboundNatRules/c1-control-plane-abc")
        );
        assert_eq!(wanted.ownership(), Ownership::OwnedParent);
        let body = wanted.desired(None).unwrap();
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"properties": {
                "frontendIPConfiguration": {"id": format!("{lb}/frontendIPConfigurations/c1-public-lb-frontEnd")},
                "protocol": "Tcp",
                "frontendPort": 2201,
                "backendPort": 22,
                "idleTimeoutInMinutes": 4,
                "enableFloatingIP": false
            }})
        );
        // Another port wanted now (the rule was made when 22 was free) changes nothing.
        let existing = rule("c1-control-plane-abc", 22);
        let later = InboundNatRule::new(&target, "c1-control-plane-abc")
            .unwrap()
            .frontend_port(2203);
        assert_eq!(later.desired(Some(&existing)), None);
    }
}
