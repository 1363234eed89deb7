//! A route table of the cluster (`Microsoft.Network/routeTables`), attached to the subnets that
//! name it. The cluster creates it empty; the routes in it are the cloud provider's (it adds pod
//! routes), so a write of an existing table carries them.

use capz_azure::models::network::{RouteTable as RouteTableModel, RouteTableProperties};
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{Role, Tags};

/// A route table of the cluster.
#[derive(Debug, Clone)]
pub struct RouteTable {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
}

impl RouteTable {
    /// The table `name` in the cluster's resource group.
    ///
    /// # Errors
    /// When `name` is not a valid Azure name.
    pub fn new(scope: &ClusterScope, name: &str) -> Result<Self, ScopeError> {
        Ok(Self {
            id: scope
                .id_of::<RouteTableModel>(name)
                .map_err(|source| ScopeError::Invalid {
                    field: "spec.networkSpec.subnets[].routeTable.name",
                    value: name.to_owned(),
                    source,
                })?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags: scope.owned_tags(Role::Common),
        })
    }
}

impl AzureResource for RouteTable {
    type Model = RouteTableModel;
    const SERVICE: &'static str = "routetables";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&RouteTableModel>) -> Option<RouteTableModel> {
        if existing.is_some_and(|table| table.tags.as_ref() == Some(&self.tags)) {
            return None;
        }
        let kept = existing.and_then(|table| table.properties.as_ref());
        Some(RouteTableModel {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            properties: Some(RouteTableProperties {
                routes: kept.and_then(|properties| properties.routes.clone()),
                disable_bgp_route_propagation: kept
                    .and_then(|properties| properties.disable_bgp_route_propagation),
                ..RouteTableProperties::default()
            }),
            ..RouteTableModel::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use capz_azure::models::network::{Route, RouteProperties};

    use super::*;
    use crate::test_scope;

    #[test]
    fn a_retagged_table_keeps_its_routes() {
        let scope = test_scope(&serde_json::json!({}));
        let table = RouteTable::new(&scope, "c1-node-routetable").unwrap();
        let mut existing = table.desired(None).unwrap();
        assert_eq!(table.desired(Some(&existing)), None);
        existing.properties.as_mut().unwrap().routes = Some(vec![Route {
            name: Some("pods".into()),
            properties: Some(RouteProperties {
                address_prefix: Some("192.168.1.0/24".into()),
                ..RouteProperties::default()
            }),
            ..Route::default()
        }]);
        existing.tags = None;
        let update = table.desired(Some(&existing)).unwrap();
        assert_eq!(update.properties.unwrap().routes.unwrap().len(), 1);
    }
}
