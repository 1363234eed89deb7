//! Which events of watched objects are worth a reconcile: a watch delivers every write, peers'
//! status updates included, while the controller reacts only to a few fields.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use capz_kit::kube::{Resource, ResourceExt as _};

/// Remembers, per object, a hash of the fields a controller reacts to.
#[derive(Debug, Default)]
pub(crate) struct Seen(Mutex<HashMap<String, u64>>);

impl Seen {
    /// Whether `fields` of `object` differ from the last time (always true the first time).
    pub(crate) fn changed(&self, object: &impl Resource, fields: impl Hash) -> bool {
        let mut hasher = DefaultHasher::new();
        fields.hash(&mut hasher);
        let hash = hasher.finish();
        let key = object.uid().unwrap_or_else(|| object.name_any());
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, hash)
            != Some(hash)
    }

    /// Forgets `object`, once it is gone.
    pub(crate) fn forget(&self, object: &impl Resource) {
        let key = object.uid().unwrap_or_else(|| object.name_any());
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use capz_kit::k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn only_a_change_of_the_fields_counts() {
        let seen = Seen::default();
        let mut object = ConfigMap::default();
        object.metadata.uid = Some("u1".into());
        assert!(seen.changed(&object, ("a", 1)));
        assert!(!seen.changed(&object, ("a", 1)));
        assert!(seen.changed(&object, ("a", 2)));
        seen.forget(&object);
        assert!(seen.changed(&object, ("a", 2)));
    }
}
