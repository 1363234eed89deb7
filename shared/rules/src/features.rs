//! Feature gates that change what admission accepts, named as CAPZ names them so that the same
//! `--feature-gates` flag value works for both.

use std::fmt;
use std::str::FromStr;

/// The gates admission consults. Gates CAPZ has that change nothing here are accepted and ignored
/// by [`Features::from_str`], so a CAPZ flag value carries over unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `APIServerILB`: an internal frontend beside the public one on the API server load balancer.
    pub api_server_ilb: bool,
    /// `EdgeZone`: clusters in an Azure edge zone (`spec.extendedLocation`).
    pub edge_zone: bool,
}

/// Gates CAPZ knows that do not change admission here.
const OTHER_GATES: &[&str] = &[
    "MachinePool",
    "AKSResourceHealth",
    "ClusterResourceSet",
    "ClusterTopology",
    "ASOAPI",
    "KubeadmBootstrapFormatIgnition",
    "MachinePoolMachines",
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

    /// Reads `Gate=true,Other=false` (empty: every gate off).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut features = Self::default();
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
                "APIServerILB" => features.api_server_ilb = on,
                "EdgeZone" => features.edge_zone = on,
                known if OTHER_GATES.contains(&known) => {}
                unknown => {
                    return Err(FeaturesError(format!(
                        "unknown feature gate {unknown:?}; known gates: APIServerILB, EdgeZone, {}",
                        OTHER_GATES.join(", ")
                    )));
                }
            }
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
                edge_zone: false
            }
        );
        assert_eq!("".parse::<Features>().unwrap(), Features::default());
        assert!(
            "Nope=true"
                .parse::<Features>()
                .unwrap_err()
                .to_string()
                .contains("unknown feature gate \"Nope\"")
        );
        assert!("EdgeZone".parse::<Features>().is_err());
        assert!("EdgeZone=yes".parse::<Features>().is_err());
    }
}
