//! What an AzureMachinePool asks for, derived without calling anything: the scale set's name,
//! subnet, pools, zones, tags and identity role ([`Plan`]), the steps that build and delete it
//! ([`ORDER`], [`DELETION`]), and which instances a pass creates and removes ([`decide`]): the
//! pool's scaling and its rolling replacement, one decision over all its instances.

use std::hash::{DefaultHasher, Hash, Hasher};

use capz_api::azuremachinepool::{DeletePolicy, OrchestrationMode};
use capz_api::capi::MachinePool;
use capz_api::common::conditions::ConditionType;
use capz_api::{AzureMachinePool, AzureMachinePoolSpec};
use capz_azure::ResourceId;
use capz_kit::kube::ResourceExt as _;
use capz_kit::progress::Step;
use capz_kit::resource::AzureResource as _;
use capz_kit::scope::ClusterScope;
use capz_kit::tags::{Role, Tags};
use capz_resources::network_interface::{backend_pool, subnet_for_role};
use capz_resources::role_assignment::{IdentityRole, RoleAssignment};
use capz_resources::scale_set::{ScaleSet, ScaleSetMember};
use capz_resources::virtual_machine::{MachineSpecError, invalid};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The services whose operations vmss records on an AzureMachinePool.
pub(crate) const SERVICES: &[&str] = &[ScaleSet::SERVICE, RoleAssignment::SERVICE];

/// The services whose operations vmss records on an AzureMachinePoolMachine.
pub(crate) const MEMBER_SERVICES: &[&str] = &[ScaleSetMember::SERVICE];

/// A step of a pool's reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    ScaleSet,
    RoleAssignment,
}

const SCALE_SET: Step<Unit> = Step {
    unit: Unit::ScaleSet,
    condition: ConditionType::SCALE_SET_RUNNING,
    what: "scale set",
};
const ROLE_ASSIGNMENT: Step<Unit> = Step {
    unit: Unit::RoleAssignment,
    condition: ConditionType::ROLE_ASSIGNMENT_READY,
    what: "role assignment",
};

/// The steps that build a pool: the role assignment needs the set's identity.
pub(crate) const ORDER: &[Step<Unit>] = &[SCALE_SET, ROLE_ASSIGNMENT];

/// The steps that delete it: the set (with its instances), then the assignment.
pub(crate) const DELETION: &[Step<Unit>] = &[SCALE_SET, ROLE_ASSIGNMENT];

/// Everything of a pool but its scale set's body, which needs the bootstrap data and image.
pub(crate) struct Plan {
    /// The set's name: the AzureMachinePool's.
    pub(crate) name: String,
    pub(crate) flexible: bool,
    /// The set known by name, to read and delete.
    pub(crate) set: ScaleSet,
    pub(crate) subnet: ResourceId,
    pub(crate) backend_pools: Vec<ResourceId>,
    pub(crate) zones: Vec<String>,
    pub(crate) tags: Tags,
    pub(crate) role: Option<IdentityRole>,
    pub(crate) rollout: Rollout,
}

impl Plan {
    /// Whether the pool has resources of the step of `unit`.
    pub(crate) fn expects(&self, unit: Unit) -> bool {
        match unit {
            Unit::ScaleSet => true,
            Unit::RoleAssignment => self.role.is_some(),
        }
    }

    /// The plan of `azure_pool`, owned by `pool`, in the cluster of `scope`.
    pub(crate) fn new(
        scope: &ClusterScope,
        azure_pool: &AzureMachinePool,
        pool: &MachinePool,
    ) -> Result<Self, MachineSpecError> {
        let spec = &azure_pool.spec;
        let name = azure_pool.name_any();
        let set = ScaleSet::named(scope, &name).map_err(|err| invalid("metadata.name", err.to_string()))?;
        let named_subnet = spec
            .template
            .vm
            .network_interfaces
            .iter()
            .flatten()
            .find_map(|interface| interface.subnet_name.clone())
            .or_else(|| spec.template.vm.subnet_name.clone());
        let subnet_name = subnet_for_role(scope, named_subnet.as_deref(), false)?;
        let subnet = scope
            .subnet_id(&subnet_name)
            .map_err(|err| invalid("spec.template.networkInterfaces[].subnetName", err.to_string()))?;
        let outbound = scope
            .spec
            .network_spec
            .as_ref()
            .and_then(|network| network.node_outbound_lb.as_ref());
        let backend_pools = backend_pool(scope, outbound)?
            .map(|(_, pool)| pool)
            .into_iter()
            .collect();
        let role = IdentityRole::of(&spec.identities, set.id());
        Ok(Self {
            flexible: spec.orchestration_mode == Some(OrchestrationMode::Flexible),
            set,
            subnet,
            backend_pools,
            zones: pool.spec.failure_domains.clone().unwrap_or_default(),
            tags: scope.machine_tags(Role::Node, spec.additional_tags.as_ref()),
            role,
            rollout: Rollout::of(spec, pool.spec.replicas),
            name,
        })
    }
}

/// How the pool's instances are replaced and removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rollout {
    /// The MachinePool's replicas.
    pub(crate) desired: u32,
    /// How many instances may exist above `desired` while instances are replaced.
    pub(crate) max_surge: u32,
    /// How many of `desired` may be unavailable while instances are replaced or removed.
    pub(crate) max_unavailable: u32,
    pub(crate) policy: DeletePolicy,
}

impl Rollout {
    /// The rollout of a pool with `spec` and `replicas` (Cluster API defaults a MachinePool to 1):
    /// `maxSurge` 1 and `maxUnavailable` 0 unless the strategy says otherwise (percentages of the
    /// replicas, surge rounded up, unavailability down); when both are 0 nothing could move, so
    /// one instance may be unavailable, as Cluster API's MachineDeployments do.
    pub(crate) fn of(spec: &AzureMachinePoolSpec, replicas: Option<i32>) -> Self {
        let desired = u32::try_from(replicas.unwrap_or(1)).unwrap_or(0);
        let rolling = spec
            .strategy
            .as_ref()
            .and_then(|strategy| strategy.rolling_update.as_ref());
        let resolve = |value: Option<&IntOrString>, default: u32, round_up: bool| match value {
            None => default,
            Some(IntOrString::Int(count)) => u32::try_from(*count).unwrap_or(0),
            Some(IntOrString::String(text)) => {
                let percent: u64 = text.trim_end_matches('%').trim().parse().unwrap_or(0);
                let scaled = u64::from(desired) * percent;
                let count = if round_up {
                    scaled.div_ceil(100)
                } else {
                    scaled / 100
                };
                u32::try_from(count).unwrap_or(u32::MAX)
            }
        };
        let max_surge = resolve(rolling.and_then(|r| r.max_surge.as_ref()), 1, true);
        let mut max_unavailable = resolve(rolling.and_then(|r| r.max_unavailable.as_ref()), 0, false);
        if max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        Self {
            desired,
            max_surge,
            max_unavailable,
            policy: rolling
                .and_then(|rolling| rolling.delete_policy)
                .unwrap_or(DeletePolicy::Oldest),
        }
    }
}

/// One instance of the pool as a pass sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "four independent facts the rollout weighs"
)]
pub(crate) struct Member {
    /// Its AzureMachinePoolMachine's name.
    pub(crate) name: String,
    /// When it was created (RFC 3339, which orders as text).
    pub(crate) created: String,
    /// Its Node is Ready and schedulable.
    pub(crate) ready: bool,
    /// It runs a model other than the one the pool wants.
    pub(crate) outdated: bool,
    /// It is on its way out (its Machine or AzureMachinePoolMachine is deleted).
    pub(crate) leaving: bool,
    /// Its Machine asks to go first.
    pub(crate) marked: bool,
}

/// What a pass does about the pool's instances.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Decision {
    /// How many new instances the set is to make beyond those it has.
    pub(crate) add: u32,
    /// The members to remove now (indices into the members given).
    pub(crate) remove: Vec<usize>,
    /// Why instances wait to be replaced or removed, when some do.
    pub(crate) waiting: Option<String>,
}

/// Which instances the pool adds and removes, as a MachineDeployment would with its machines:
/// instances on an old model are replaced, up to `maxSurge` new ones above the replicas; an
/// instance goes only while at least `replicas - maxUnavailable` others stay available, except
/// instances that are not available anyway, which go first. Of the same kind, those whose Machine
/// asks to go first, then those the delete policy names. Instances on their way out count for
/// nothing; `members` holds only instances the set has.
pub(crate) fn decide(rollout: &Rollout, members: &[Member]) -> Decision {
    let desired = rollout.desired;
    let count = |keep: &dyn Fn(&Member) -> bool| {
        u32::try_from(members.iter().filter(|member| keep(member)).count()).unwrap_or(u32::MAX)
    };
    let old = count(&|member| !member.leaving && member.outdated);
    let current = count(&|member| !member.leaving && !member.outdated);
    let min_available = desired.saturating_sub(rollout.max_unavailable);
    let mut available = count(&|member| !member.leaving && member.ready);
    let mut remove = Vec::new();
    let mut held = 0_u32;
    let order = removal_order(rollout.policy, members);
    // Instances on an old model go as the pool's availability allows.
    for &index in order.iter().filter(|&&index| members[index].outdated) {
        let member = &members[index];
        if !member.ready {
            remove.push(index);
        } else if available > min_available {
            available -= 1;
            remove.push(index);
        } else {
            held += 1;
        }
    }
    // Instances on the current model beyond the replicas go too, unavailable ones first.
    let mut excess = current.saturating_sub(desired);
    for &index in order.iter().filter(|&&index| !members[index].outdated) {
        if excess == 0 {
            break;
        }
        let member = &members[index];
        if !member.ready {
            remove.push(index);
            excess -= 1;
        } else if available > min_available {
            available -= 1;
            remove.push(index);
            excess -= 1;
        } else {
            held += 1;
        }
    }
    let removed_old =
        u32::try_from(remove.iter().filter(|&&index| members[index].outdated).count()).unwrap_or(u32::MAX);
    let old_left = old - removed_old;
    let staying = if old_left > 0 {
        // New instances replace the old ones, up to maxSurge above the replicas.
        (desired + rollout.max_surge).min(old_left + desired)
    } else {
        desired
    };
    let removing = u32::try_from(remove.len()).unwrap_or(u32::MAX);
    let waiting = (held > 0).then(|| {
        format!(
            "{held} instance(s) wait to be replaced or removed: {available} of {desired} available, \
             at most {} may be unavailable",
            rollout.max_unavailable
        )
    });
    Decision {
        add: staying.saturating_sub(current + old - removing),
        remove,
        waiting,
    }
}

/// The members that may go, in the order they go: those whose Machine asks to, then unavailable
/// ones, then as the delete policy says (`Random`: a fixed order from their names, so that
/// successive passes agree).
fn removal_order(policy: DeletePolicy, members: &[Member]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..members.len())
        .filter(|&index| !members[index].leaving)
        .collect();
    let scramble = |name: &str| {
        let mut hasher = DefaultHasher::new();
        name.hash(&mut hasher);
        hasher.finish()
    };
    order.sort_by(|&a, &b| {
        let (a, b) = (&members[a], &members[b]);
        let first = (!a.marked, a.ready).cmp(&(!b.marked, b.ready));
        first.then_with(|| match policy {
            DeletePolicy::Oldest => (&a.created, &a.name).cmp(&(&b.created, &b.name)),
            DeletePolicy::Newest => (&b.created, &b.name).cmp(&(&a.created, &a.name)),
            DeletePolicy::Random => scramble(&a.name).cmp(&scramble(&b.name)),
        })
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(desired: u32, max_surge: u32, max_unavailable: u32) -> Rollout {
        Rollout {
            desired,
            max_surge,
            max_unavailable,
            policy: DeletePolicy::Oldest,
        }
    }

    fn members(specs: &[(&str, bool, bool)]) -> Vec<Member> {
        specs
            .iter()
            .enumerate()
            .map(|(index, (name, ready, outdated))| Member {
                name: (*name).to_owned(),
                created: format!("2026-01-01T00:00:0{index}Z"),
                ready: *ready,
                outdated: *outdated,
                ..Member::default()
            })
            .collect()
    }

    fn removed<'a>(decision: &Decision, members: &'a [Member]) -> Vec<&'a str> {
        decision
            .remove
            .iter()
            .map(|&index| members[index].name.as_str())
            .collect()
    }

    #[test]
    fn a_steady_pool_keeps_its_instances() {
        let pool = members(&[("a", true, false), ("b", true, false), ("c", true, false)]);
        let decision = decide(&rollout(3, 1, 0), &pool);
        assert_eq!(decision, Decision::default());
        assert_eq!(decide(&rollout(5, 1, 0), &pool).add, 2);
    }

    #[test]
    fn scale_down_removes_unready_instances_first_then_by_policy() {
        // An unready extra instance is what goes, not a ready one.
        let pool = members(&[
            ("a", true, false),
            ("b", true, false),
            ("c", true, false),
            ("d", false, false),
        ]);
        let decision = decide(&rollout(3, 1, 0), &pool);
        assert_eq!(removed(&decision, &pool), ["d"]);
        let decision = decide(&rollout(2, 1, 0), &pool);
        assert_eq!(removed(&decision, &pool), ["d", "a"]);
        let newest = Rollout {
            policy: DeletePolicy::Newest,
            ..rollout(1, 1, 0)
        };
        assert_eq!(removed(&decide(&newest, &pool), &pool), ["d", "c", "b"]);
        assert_eq!(decide(&rollout(2, 1, 0), &pool).add, 0);
    }

    #[test]
    fn a_marked_machine_goes_first() {
        let mut pool = members(&[("a", true, false), ("b", true, false), ("c", true, false)]);
        pool[2].marked = true;
        assert_eq!(removed(&decide(&rollout(2, 1, 0), &pool), &pool), ["c"]);
    }

    #[test]
    fn a_rollout_with_surge_adds_before_it_removes() {
        let mut pool = members(&[("a", true, true), ("b", true, true), ("c", true, true)]);
        let policy = rollout(3, 1, 0);
        let first = decide(&policy, &pool);
        assert_eq!((first.add, first.remove.len()), (1, 0));
        assert!(first.waiting.is_some());
        // The new instance is not ready yet: nothing goes.
        pool.push(Member {
            name: "d".to_owned(),
            created: "2026-01-01T00:01:00Z".to_owned(),
            ..Member::default()
        });
        let waiting = decide(&policy, &pool);
        assert_eq!((waiting.add, waiting.remove.len()), (0, 0));
        // Once it is, the oldest goes, and while it drains the next new instance comes: four
        // instances stay.
        pool[3].ready = true;
        let next = decide(&policy, &pool);
        assert_eq!(removed(&next, &pool), ["a"]);
        assert_eq!(next.add, 1);
        pool[0].leaving = true;
        let draining = decide(&policy, &pool);
        assert_eq!((draining.add, draining.remove.len()), (1, 0));
    }

    #[test]
    fn a_rollout_without_surge_removes_one_then_replaces_it() {
        let mut pool = members(&[("a", true, true), ("b", true, true), ("c", true, true)]);
        let policy = rollout(3, 0, 1);
        let first = decide(&policy, &pool);
        assert_eq!(removed(&first, &pool), ["a"]);
        // A new instance replaces it at once.
        assert_eq!(first.add, 1);
        pool[0].leaving = true;
        // Nothing else goes until the new one is available.
        let second = decide(&policy, &pool);
        assert_eq!((second.add, second.remove.len()), (1, 0));
        assert!(second.waiting.is_some());
    }

    #[test]
    fn never_more_unavailable_than_allowed() -> Result<(), std::num::TryFromIntError> {
        for (surge, unavailable) in [(1, 0), (0, 1), (1, 1), (2, 2)] {
            let policy = rollout(5, surge, unavailable);
            let pool = members(&[
                ("a", true, true),
                ("b", true, true),
                ("c", true, true),
                ("d", true, true),
                ("e", true, true),
            ]);
            let decision = decide(&policy, &pool);
            let ready_left = pool
                .iter()
                .enumerate()
                .filter(|(index, member)| member.ready && !decision.remove.contains(index))
                .count();
            assert!(
                ready_left >= 5 - unavailable as usize,
                "{surge}/{unavailable}: {decision:?}"
            );
            let staying = 5 - u32::try_from(decision.remove.len())?;
            assert!(
                staying + decision.add <= 5 + surge,
                "{surge}/{unavailable}: {decision:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn unready_old_instances_go_at_once() {
        let pool = members(&[("a", false, true), ("b", true, true)]);
        assert_eq!(removed(&decide(&rollout(2, 1, 0), &pool), &pool), ["a"]);
    }

    #[test]
    fn strategy_values_resolve_against_the_replicas() {
        let spec: AzureMachinePoolSpec = serde_json::from_value(serde_json::json!({
            "location": "westeurope",
            "template": {"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%", "deletePolicy": "Newest"}},
        }))
        .unwrap();
        let rollout = Rollout::of(&spec, Some(5));
        assert_eq!((rollout.max_surge, rollout.max_unavailable), (2, 1));
        assert_eq!(rollout.policy, DeletePolicy::Newest);
        let both_zero: AzureMachinePoolSpec = serde_json::from_value(serde_json::json!({
            "location": "westeurope",
            "template": {"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux"}},
            "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
        }))
        .unwrap();
        let rollout = Rollout::of(&both_zero, None);
        assert_eq!(
            (rollout.desired, rollout.max_surge, rollout.max_unavailable),
            (1, 0, 1)
        );
    }
}
