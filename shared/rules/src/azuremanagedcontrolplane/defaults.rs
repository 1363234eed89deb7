//! What CAPZ fills in on an AKS control plane and its template.
//!
//! The network and the node resource group take the values of
//! [`AzureManagedControlPlaneSpec::defaulted_virtual_network`] and
//! [`AzureManagedControlPlaneSpec::defaulted_node_resource_group`], the ones the aks controller
//! builds from, so that what is stored and what is built agree.

use capz_api::azuremanagedcontrolplane::{
    AksSku, AzureManagedControlPlaneClassSpec, AzureManagedControlPlaneSkuTier, LoadBalancerSku,
    ManagedControlPlaneSubnet, NetworkPlugin, OidcIssuerProfile,
};
use capz_api::capi::CLUSTER_NAME_LABEL;
use capz_api::{AzureManagedControlPlane, AzureManagedControlPlaneTemplate};

use crate::Context;
use crate::field::{FieldError, FieldPath};

/// The address space of a template's network, and of its subnet, when not given.
const TEMPLATE_VNET_CIDR: &str = "10.0.0.0/8";
const TEMPLATE_SUBNET_CIDR: &str = "10.240.0.0/16";

/// `version` with a `v` in front, unless empty or already there.
pub(super) fn normalized_version(version: &mut String) {
    if !version.is_empty() && !version.starts_with('v') {
        version.insert(0, 'v');
    }
}

/// The Free tier when none is given; the old name `Paid` becomes `Standard`.
fn default_sku(class: &mut AzureManagedControlPlaneClassSpec) {
    let sku = class.sku.get_or_insert(AksSku {
        tier: AzureManagedControlPlaneSkuTier::Free,
    });
    if sku.tier == AzureManagedControlPlaneSkuTier::Paid {
        sku.tier = AzureManagedControlPlaneSkuTier::Standard;
    }
}

/// Every default of a control plane that needs no randomness: also applied to the old object of
/// an update, so that one stored before a default existed compares as if it had it.
pub(super) fn default_fixed(plane: &mut AzureManagedControlPlane) {
    let name = plane.metadata.name.clone().unwrap_or_default();
    let cluster = plane
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(CLUSTER_NAME_LABEL))
        .cloned();
    let spec = &mut plane.spec;
    normalized_version(&mut spec.class.version);
    default_sku(&mut spec.class);
    if let Some(member) = spec.fleets_member.as_mut()
        && member.name.as_deref().is_none_or(str::is_empty)
        && let Some(cluster) = &cluster
    {
        member.name = Some(cluster.clone());
    }
    if spec.class.resource_group_name.is_empty()
        && let Some(cluster) = &cluster
    {
        spec.class.resource_group_name.clone_from(cluster);
    }
    spec.node_resource_group_name = Some(spec.defaulted_node_resource_group(&name));
    spec.class.virtual_network = Some(spec.defaulted_virtual_network(&name));
    spec.class
        .oidc_issuer_profile
        .get_or_insert_with(OidcIssuerProfile::default);
    spec.dns_prefix.get_or_insert_with(|| name.clone());
    for extension in spec.class.extensions.iter_mut().flatten() {
        if let Some(plan) = extension.plan.as_mut()
            && plan.name.as_deref().is_none_or(str::is_empty)
        {
            plan.name = Some(format!("{name}-{}", plan.product.as_deref().unwrap_or_default()));
        }
    }
}

/// A control plane's defaults; an SSH key given as `""` is replaced by a generated one on a
/// real create.
pub(super) fn default_control_plane(
    plane: &mut AzureManagedControlPlane,
    ctx: &Context<'_>,
) -> Result<(), FieldError> {
    if plane.spec.ssh_public_key.as_deref() == Some("") && ctx.may_generate() {
        let key = ctx.entropy.ssh_public_key().map_err(|err| {
            FieldError::required(
                FieldPath::root("spec").child("sshPublicKey"),
                format!("an empty key asks for a generated one, and none could be made ({err}); give a base64-encoded OpenSSH public key or leave the field out"),
            )
        })?;
        plane.spec.ssh_public_key = Some(key);
    }
    default_fixed(plane);
    Ok(())
}

/// A template's defaults: the Azure plugin, the Standard load balancer, no preview API, the
/// network's ranges and the subnet named after the template, the Free tier.
pub(super) fn default_template(template: &mut AzureManagedControlPlaneTemplate) {
    let name = template.metadata.name.clone().unwrap_or_default();
    let class = &mut template.spec.template.spec.class;
    class.network_plugin.get_or_insert(NetworkPlugin::Azure);
    class.load_balancer_sku.get_or_insert(LoadBalancerSku::Standard);
    class.enable_preview_features.get_or_insert(false);
    normalized_version(&mut class.version);
    let network = class.virtual_network.get_or_insert_with(Default::default);
    if network.cidr_block.is_empty() {
        TEMPLATE_VNET_CIDR.clone_into(&mut network.cidr_block);
    }
    let subnet = network
        .subnet
        .get_or_insert_with(ManagedControlPlaneSubnet::default);
    if subnet.name.is_empty() {
        subnet.name = name;
    }
    if subnet.cidr_block.is_empty() {
        TEMPLATE_SUBNET_CIDR.clone_into(&mut subnet.cidr_block);
    }
    default_sku(class);
}

/// Whether a template names its network, which clusters made from it cannot share.
pub(super) fn template_names_network(template: &AzureManagedControlPlaneTemplate) -> bool {
    template
        .spec
        .template
        .spec
        .class
        .virtual_network
        .as_ref()
        .is_some_and(|network| !network.name.is_empty())
}
