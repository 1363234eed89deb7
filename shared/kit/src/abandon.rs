//! Letting an object go without deleting its Azure resources, when a person decides that its
//! deletion cannot finish (the credentials are gone for good, the subscription was cancelled):
//! the annotation `<finalizer>/abandon-azure-resources: "true"` on an object being deleted makes
//! its controller drop its finalizer at the next reconcile, delete nothing, and say in a Warning
//! event on the object which Azure resources it leaves behind, so that someone can remove them
//! by hand. Without the annotation a deletion waits for as long as Azure refuses it.

use std::fmt::Write as _;

use capz_azure::ResourceId;
use kube::{Resource, ResourceExt as _};

use crate::conditions::Reason;
use crate::controller::ControllerId;

/// What follows the controller's finalizer in the annotation's name.
const SUFFIX: &str = "abandon-azure-resources";

/// The event reason of a deletion that left Azure resources behind.
pub const REASON: &str = "AzureResourcesAbandoned";

/// The longest note an event may carry (events.k8s.io/v1 refuses longer ones).
const NOTE_LIMIT: usize = 1024;

/// The annotation that asks the controller `id` to abandon an object's Azure resources, such as
/// `aks.infrastructure.cluster.x-k8s.io/abandon-azure-resources`: named after its finalizer,
/// which is what it lets go of.
#[must_use]
pub fn annotation(id: ControllerId) -> String {
    format!("{}/{SUFFIX}", id.finalizer())
}

/// Whether `object` asks the controller `id` to abandon its Azure resources (the annotation is
/// `"true"`).
#[must_use]
pub fn requested(object: &impl Resource, id: ControllerId) -> bool {
    object
        .annotations()
        .get(&annotation(id))
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
}

/// The note of the event telling that `left` stay in Azure: every id, as many as an event holds
/// (the log has them all).
fn note(left: &[ResourceId]) -> String {
    let mut note = String::from("deletion abandoned on request; these Azure resources were not deleted:");
    if left.is_empty() {
        note.push_str(" none known");
        return note;
    }
    for (index, id) in left.iter().enumerate() {
        let entry = format!(" {id}");
        let rest = left.len() - index;
        // Room for the entry, and for saying how many did not fit if more follow.
        let tail = if rest > 1 {
            format!(" and {} more", rest - 1).len()
        } else {
            0
        };
        if note.len() + entry.len() + tail > NOTE_LIMIT {
            let _ = write!(note, " and {rest} more");
            break;
        }
        note.push_str(&entry);
    }
    note
}

/// Tells, as a Warning event on the object being reconciled and in the log, that its deletion
/// was abandoned and which Azure resources (`left`) remain. Published at once: the object goes
/// with its finalizer right after.
pub async fn announce(left: &[ResourceId]) {
    let ids: Vec<String> = left.iter().map(ToString::to_string).collect();
    tracing::warn!(left = ?ids, "deletion abandoned: Azure resources left behind");
    crate::observed::warn(&Reason::new(REASON), "Abandon", note(left)).await;
}

#[cfg(test)]
mod tests {
    use capz_api::controllers::Family;

    use super::*;

    fn id(name: &str) -> ResourceId {
        format!("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{name}")
            .parse()
            .unwrap()
    }

    #[test]
    fn the_annotation_is_named_after_the_finalizer() {
        assert_eq!(
            annotation(ControllerId::of(Family::Aks)),
            "aks.infrastructure.cluster.x-k8s.io/abandon-azure-resources"
        );
    }

    #[test]
    fn the_note_names_every_id_that_fits_and_counts_the_rest() {
        let few = note(&[id("one"), id("two")]);
        assert!(
            few.ends_with(
                "/resourceGroups/one /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/two"
            ),
            "{few}"
        );
        let many: Vec<ResourceId> = (0..40).map(|index| id(&format!("group-{index}"))).collect();
        let cut = note(&many);
        assert!(cut.len() <= NOTE_LIMIT, "{}", cut.len());
        assert!(cut.contains("group-0 ") && cut.ends_with(" more"), "{cut}");
        assert_eq!(
            note(&[]),
            "deletion abandoned on request; these Azure resources were not deleted: none known"
        );
    }
}
