//! The names one controller goes by. [`ControllerId`] derives every one of them — field manager,
//! finalizer, event reporter, ARM user agent, Lease — from the controller's [`Family`], so they
//! cannot disagree.

use capz_api::controllers::Family;

use crate::apply::FieldManager;

/// The names one controller goes by, all derived from its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ControllerId {
    name: &'static str,
    qualified: &'static str,
    finalizer: &'static str,
}

impl ControllerId {
    /// The controller of `family`.
    #[must_use]
    pub const fn of(family: Family) -> Self {
        Self {
            name: family.name(),
            qualified: family.qualified(),
            finalizer: family.finalizer(),
        }
    }

    /// A controller outside the families, such as a test's: `name`, `capz-<name>` as
    /// `qualified`, and its finalizer.
    #[must_use]
    pub const fn custom(name: &'static str, qualified: &'static str, finalizer: &'static str) -> Self {
        Self {
            name,
            qualified,
            finalizer,
        }
    }

    /// Its short name, such as `network`: the `controller` label of its own metrics.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The field manager of everything it writes: `capz-<name>`.
    #[must_use]
    pub const fn field_manager(self) -> FieldManager {
        FieldManager::new(self.qualified)
    }

    /// The finalizer it keeps on the objects it reconciles.
    #[must_use]
    pub const fn finalizer(self) -> &'static str {
        self.finalizer
    }

    /// How it introduces itself to Azure and in events: `capz-<name>`.
    #[must_use]
    pub const fn user_agent(self) -> &'static str {
        self.qualified
    }

    /// Its leader-election Lease, which also tells peers it runs: `capz-<name>`.
    #[must_use]
    pub const fn lease(self) -> &'static str {
        self.qualified
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_comes_from_the_family() {
        let id = ControllerId::of(Family::LoadBalancer);
        assert_eq!(id.name(), "loadbalancer");
        assert_eq!(id.field_manager().as_str(), "capz-loadbalancer");
        assert_eq!(id.user_agent(), "capz-loadbalancer");
        assert_eq!(id.lease(), "capz-loadbalancer");
        assert_eq!(id.finalizer(), "loadbalancer.infrastructure.cluster.x-k8s.io");
    }
}
