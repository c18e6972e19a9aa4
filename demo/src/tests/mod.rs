//! The unit tests of this folder's modules, one file each.

#[cfg(feature = "kube")]
mod kube_exec;
#[cfg(feature = "kube")]
mod kube_exec_training;
