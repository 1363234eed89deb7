//! Long-running Azure operations kept in an object's `status.longRunningOperationStates`.
//!
//! A controller that starts an operation records its [`OperationToken`] there (through its
//! status apply) and, on later reconciles — in the same process or after a restart — polls the
//! recorded URL once per reconcile instead of writing again. Each entry is keyed by the write
//! (`PUT`, `PATCH`, `DELETE`), the service (one per resource kind, owned by exactly one
//! controller) and the resource's name. `data` holds the token in capz-rs's format; an entry whose
//! data is not (CAPZ's own resume tokens, say) is dropped, and the resource is read afresh.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use capz_api::common::operations::{Future, Futures};
use capz_azure::{OperationMethod, OperationToken};

/// The poll URLs of the operations this process follows, so the in-flight gauge counts each once
/// however many reconciles poll it, resumed ones included.
static FOLLOWED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The operations in flight of one controller on one object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Operations {
    controller: &'static str,
    services: Vec<&'static str>,
    entries: Vec<Future>,
    recorded: Vec<Future>,
}

impl Operations {
    /// The entries of `states` that belong to `services`, the own services of `controller`.
    #[must_use]
    pub fn owned(states: Option<&Futures>, controller: &'static str, services: &[&'static str]) -> Self {
        let recorded: Vec<Future> = states
            .map(|states| {
                states
                    .0
                    .iter()
                    .filter(|entry| services.contains(&entry.service_name.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Self {
            controller,
            services: services.to_vec(),
            entries: recorded.clone(),
            recorded,
        }
    }

    /// Whether the entries differ from those read from status, so they need applying.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.entries != self.recorded
    }

    /// Removes and returns the operation `method` of `service` on `name`. `Err` carries the
    /// entry's data when it is not a token of ours; the entry is gone either way.
    pub fn take(
        &mut self,
        service: &str,
        name: &str,
        method: OperationMethod,
    ) -> Option<Result<OperationToken, String>> {
        let wire = method_name(method);
        let position = self
            .entries
            .iter()
            .position(|entry| entry.service_name == service && entry.name == name && entry.type_ == wire)?;
        let entry = self.entries.remove(position);
        Some(OperationToken::decode(&entry.data).map_err(|_| entry.data))
    }

    /// Forgets every operation on `name` of `service`, whatever its method.
    pub fn forget(&mut self, service: &'static str, name: &str) {
        let (forgotten, kept) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|entry| entry.service_name == service && entry.name == name);
        self.entries = kept;
        for entry in forgotten {
            if let Ok(token) = OperationToken::decode(&entry.data) {
                self.ended(service, &token);
            }
        }
    }

    /// Records `token` as the operation of `service` on `name`, replacing an entry with the same
    /// key.
    ///
    /// # Panics
    /// In debug builds, when `service` is not one of this controller's.
    pub fn record(&mut self, service: &'static str, name: &str, token: &OperationToken) {
        debug_assert!(
            self.services.contains(&service),
            "{service} is not a service of this controller"
        );
        let wire = method_name(token.method);
        self.entries
            .retain(|entry| !(entry.service_name == service && entry.name == name && entry.type_ == wire));
        self.entries.push(Future {
            type_: wire.to_owned(),
            resource_group: token.resource_id.resource_group_name().map(ToString::to_string),
            service_name: service.to_owned(),
            name: name.to_owned(),
            data: token.encode(),
        });
        if FOLLOWED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashSet::new)
            .insert(token.poll_url.clone())
        {
            crate::metrics::lro_started(self.controller, service);
        }
    }

    /// Notes that the operation `token` of `service` has ended (its entry was taken already).
    pub fn ended(&self, service: &'static str, token: &OperationToken) {
        if FOLLOWED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .is_some_and(|followed| followed.remove(&token.poll_url))
        {
            crate::metrics::lro_finished(self.controller, service);
        }
    }

    /// How many operations of `service` are recorded (for the operations-in-flight gauge).
    #[must_use]
    pub fn in_flight(&self, service: &str) -> usize {
        self.entries
            .iter()
            .filter(|entry| entry.service_name == service)
            .count()
    }

    /// The entries to apply: all of this controller's, since an entry left out of an apply is
    /// removed.
    #[must_use]
    pub fn entries(&self) -> &[Future] {
        &self.entries
    }
}

fn method_name(method: OperationMethod) -> &'static str {
    match method {
        OperationMethod::Put => "PUT",
        OperationMethod::Patch => "PATCH",
        OperationMethod::Delete => "DELETE",
    }
}

#[cfg(test)]
mod tests {
    use capz_azure::{ApiVersion, PollKind};

    use super::*;

    fn token(method: OperationMethod) -> OperationToken {
        OperationToken {
            method,
            poll_url: "https://management.azure.com/subscriptions/00000000-0000-0000-0000-000000000001/providers/Microsoft.Network/locations/westeurope/operations/1".into(),
            poll_kind: PollKind::AsyncOperation,
            resource_id: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet"
                .parse()
                .unwrap(),
            api_version: ApiVersion::new("2024-07-01"),
            creates: false,
        }
    }

    fn foreign(service: &str, data: &str) -> Future {
        Future {
            type_: "PUT".into(),
            resource_group: None,
            service_name: service.into(),
            name: "vnet".into(),
            data: data.into(),
        }
    }

    #[test]
    fn only_the_controllers_services_are_kept_and_tokens_round_trip() {
        let states = Futures(vec![
            foreign("loadbalancers", "x"),
            foreign("virtualnetworks", "not ours"),
        ]);
        let mut operations = Operations::owned(Some(&states), "test", &["virtualnetworks"]);
        assert_eq!(operations.entries().len(), 1);
        assert!(!operations.changed());
        // CAPZ's token, or anything else that is not ours, is dropped with its entry.
        assert_eq!(
            operations.take("virtualnetworks", "vnet", OperationMethod::Put),
            Some(Err("not ours".to_owned()))
        );
        assert!(operations.entries().is_empty());
        assert!(operations.changed());

        operations.record("virtualnetworks", "vnet", &token(OperationMethod::Put));
        operations.record("virtualnetworks", "vnet", &token(OperationMethod::Put));
        assert_eq!(operations.entries().len(), 1);
        assert_eq!(operations.entries()[0].type_, "PUT");
        assert_eq!(operations.entries()[0].resource_group.as_deref(), Some("rg"));
        assert_eq!(operations.in_flight("virtualnetworks"), 1);
        assert_eq!(
            operations.take("virtualnetworks", "vnet", OperationMethod::Delete),
            None
        );
        assert_eq!(
            operations.take("virtualnetworks", "vnet", OperationMethod::Put),
            Some(Ok(token(OperationMethod::Put)))
        );
        assert_eq!(operations.in_flight("virtualnetworks"), 0);
    }
}
