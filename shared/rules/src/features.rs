//! Feature gates that change what admission accepts, named as CAPZ names them so that the same
//! `--feature-gates` flag value works for both.

use std::fmt;
use std::str::FromStr;

/// The gates admission consults. Gates CAPZ has that change nothing here are accepted and ignored
/// by [`Features::from_str`], so a CAPZ flag value carries over unchanged. The default is CAPZ's:
/// `MachinePool` on, the others off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// `APIServerILB`: an internal frontend beside the public one on the API server load balancer.
    pub api_server_ilb: bool,
    /// `EdgeZone`: clusters in an Azure edge zone (`spec.extendedLocation`).
    pub edge_zone: bool,
    /// `MachinePool` (Cluster API's gate, beta, on by default): AzureMachinePools and
    /// AzureMachinePoolMachines are admitted. Off, they are refused, as CAPZ then serves no
    /// webhook for them.
    pub machine_pool: bool,
}

impl Default for Features {
    fn default() -> Self {
        Self {
            api_server_ilb: false,
            edge_zone: false,
            machine_pool: true,
        }
    }
}

/// Gates CAPZ's manager (v1.26.0) knows, its own and Cluster API's, that change nothing here;
/// `ClusterResourceSet` and `MachinePoolMachines` are gates of earlier releases.
const OTHER_GATES: &[&str] = &[
    "AKS",
    "AKSResourceHealth",
    "ASOAPI",
    "ClusterResourceSet",
    "ClusterTopology",
    "InPlaceUpdates",
    "KubeadmBootstrapFormatIgnition",
    "MachinePoolMachines",
    "MachineSetPreflightChecks",
    "MachineTaintPropagation",
    "MachineWaitForVolumeDetachConsiderVolumeAttachments",
    "PriorityQueue",
    "ReconcilerRateLimiting",
    "RuntimeSDK",
    "SkipMachinePoolModelReconciliation",
];

/// A `--feature-gates` value that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeaturesError(String);

impl fmt::Display for FeaturesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FeaturesError {}

impl FromStr for Features {
    type Err = FeaturesError;

    /// Reads `Gate=true,Other=false`; a gate not named keeps its default. As with Kubernetes'
    /// gates, `AllAlpha=true` turns on the alpha gates not named (`APIServerILB`, `EdgeZone`), and
    /// `AllBeta` sets the beta gates not named (`MachinePool`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut features = Self::default();
        let mut all_alpha = false;
        let mut all_beta = None;
        let (mut ilb_named, mut edge_zone_named, mut machine_pool_named) = (false, false, false);
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| FeaturesError(format!("feature gate {pair:?} needs a value: {pair}=true")))?;
            let on = match value.trim() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(FeaturesError(format!(
                        "feature gate {name}: {other:?} is neither true nor false"
                    )));
                }
            };
            match name.trim() {
                "APIServerILB" => (features.api_server_ilb, ilb_named) = (on, true),
                "EdgeZone" => (features.edge_zone, edge_zone_named) = (on, true),
                "MachinePool" => (features.machine_pool, machine_pool_named) = (on, true),
                "AllAlpha" => all_alpha = on,
                "AllBeta" => all_beta = Some(on),
                known if OTHER_GATES.contains(&known) => {}
                unknown => {
                    return Err(FeaturesError(format!(
                        "unknown feature gate {unknown:?}; known gates: APIServerILB, EdgeZone, MachinePool, AllAlpha, AllBeta, {}",
                        OTHER_GATES.join(", ")
                    )));
                }
            }
        }
        if all_alpha {
            features.api_server_ilb |= !ilb_named;
            features.edge_zone |= !edge_zone_named;
        }
        if let Some(on) = all_beta.filter(|_| !machine_pool_named) {
            features.machine_pool = on;
        }
        Ok(features)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_capz_flag_values() {
        let features: Features = "MachinePool=true,APIServerILB=true, EdgeZone=false"
            .parse()
            .unwrap();
        assert_eq!(
            features,
            Features {
                api_server_ilb: true,
                edge_zone: false,
                machine_pool: true,
            }
        );
        assert_eq!("".parse::<Features>().unwrap(), Features::default());
        assert!(Features::default().machine_pool, "CAPZ's default: MachinePool on");
        assert!(
            "Nope=true"
                .parse::<Features>()
                .unwrap_err()
                .to_string()
                .contains("unknown feature gate \"Nope\"")
        );
        assert!("EdgeZone".parse::<Features>().is_err());
        let alpha: Features = "AllAlpha=true,EdgeZone=false,AKS=true".parse().unwrap();
        assert!(alpha.api_server_ilb && !alpha.edge_zone);
        assert!("EdgeZone=yes".parse::<Features>().is_err());
    }

    #[test]
    fn machine_pools_are_on_unless_turned_off_by_name_or_with_every_beta_gate() {
        let machine_pool = |text: &str| text.parse::<Features>().unwrap().machine_pool;
        assert!(machine_pool("EdgeZone=true"));
        assert!(!machine_pool("MachinePool=false"));
        assert!(!machine_pool("AllBeta=false"));
        assert!(machine_pool("AllBeta=false,MachinePool=true"));
        assert!(machine_pool("MachinePool=true,AllBeta=false"));
        assert!(!machine_pool("AllBeta=true,MachinePool=false"));
        assert!(machine_pool("AllAlpha=false"));
    }
}
