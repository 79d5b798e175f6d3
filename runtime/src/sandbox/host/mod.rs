//! The host side: what the sandbox finds and makes on the host before and
//! around a launch: the start-up probes, the run's cgroups (v1 and v2)
//! and their pool, the pool of network namespaces, and the thread that
//! keeps those pools filled. Nothing here runs after a fork.

pub(crate) mod ahead;
pub(crate) mod cgroup;
pub(crate) mod netns;
pub(crate) mod probe;
