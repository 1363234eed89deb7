//! User-assigned managed identities: the identities machines run as, and that the cluster's
//! workloads federate with.

use serde::{Deserialize, Serialize};

use super::TrackedResource;
use crate::id::ApiVersion;

/// A user-assigned identity (`Microsoft.ManagedIdentity/userAssignedIdentities`). Its body is
/// almost all read-only: Azure creates the service principal and reports its ids.
pub type UserAssignedIdentity = TrackedResource<UserAssignedIdentityProperties>;

/// The ids Azure gives a user-assigned identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserAssignedIdentityProperties {
    /// The tenant of its service principal (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// The object id of its service principal: what role assignments name (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_id: Option<String>,
    /// The application id of its service principal: what a workload signs in with (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

arm_model!(
    UserAssignedIdentity,
    "Microsoft.ManagedIdentity/userAssignedIdentities",
    ApiVersion::new("2023-01-31")
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::UserAssignedIdentity;

    #[test]
    fn an_answer_is_read_and_a_desired_identity_sends_no_ids() {
        // Azure spells `resourcegroups` in lower case in these ids.
        let answer = json!({
            "location": "westus2",
            "tags": {},
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz",
            "name": "capz",
            "type": "Microsoft.ManagedIdentity/userAssignedIdentities",
            "properties": {
                "isolationScope": "None",
                "tenantId": "00000000-0000-0000-0000-000000000000",
                "principalId": "fb25ca0a-e028-430c-8099-5b17b40521fe",
                "clientId": "6e6268a6-8da7-4035-8fa8-84d3279966ee"
            }
        });
        let identity: UserAssignedIdentity = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &identity);
        assert_eq!(identity.id.unwrap().resource_group_name().unwrap().as_str(), "rg");
        let properties = identity.properties.unwrap();
        assert_eq!(
            properties.principal_id.as_deref(),
            Some("fb25ca0a-e028-430c-8099-5b17b40521fe")
        );
        assert_eq!(
            properties.client_id.as_deref(),
            Some("6e6268a6-8da7-4035-8fa8-84d3279966ee")
        );

        let desired = UserAssignedIdentity {
            location: Some("westus2".parse().unwrap()),
            ..UserAssignedIdentity::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({"location": "westus2"})
        );
    }
}
