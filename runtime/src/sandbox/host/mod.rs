//! What the sandbox finds and makes on the host around a launch (nothing
//! here runs after a fork): the start-up probes, the runs' cgroups and the
//! pools of cgroups and network namespaces.

pub(crate) mod ahead;
pub(crate) mod cgroup;
pub(crate) mod netns;
pub(crate) mod probe;
