//! Per-run resource limits and the server ceilings they are checked against.

use std::time::Duration;

use super::error::{ConfigError, SandboxError};

/// Resource limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time after which the whole tree is killed.
    pub wall_time: Duration,
    /// CPU time of the solver process (`RLIMIT_CPU`, whole seconds, rounded
    /// up): `SIGXCPU` at the limit, `SIGKILL` one second later. Per
    /// process, as all rlimits are.
    pub cpu_time: Duration,
    /// Largest file the solver may write, bytes (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Open file descriptors (`RLIMIT_NOFILE`), at least 3.
    pub open_files: u64,
    /// Address-space ceiling, bytes (`RLIMIT_AS`), if any.
    pub address_space: Option<u64>,
    /// Bytes kept from the start of each of stdout and stderr.
    pub log_head: usize,
    /// Bytes kept from the end of each of stdout and stderr.
    pub log_tail: usize,
}

impl Default for Limits {
    /// Conservative defaults: 60 s wall, 60 s CPU, 256 MiB files, 64 open
    /// files, no address-space limit, 64 KiB head and tail per stream.
    fn default() -> Self {
        Self {
            wall_time: Duration::from_secs(60),
            cpu_time: Duration::from_secs(60),
            file_size: 256 << 20,
            open_files: 64,
            address_space: None,
            log_head: 64 << 10,
            log_tail: 64 << 10,
        }
    }
}

impl Limits {
    /// The largest limits a server allows by default: one hour, 4 GiB
    /// files, 1024 descriptors, 1 MiB of head and tail per stream.
    pub fn default_ceilings() -> Self {
        Self {
            wall_time: Duration::from_secs(3600),
            cpu_time: Duration::from_secs(3600),
            file_size: 4 << 30,
            open_files: 1024,
            address_space: None,
            log_head: 1 << 20,
            log_tail: 1 << 20,
        }
    }

    /// Checks these limits against `ceilings` (and basic sanity: non-zero
    /// times, at least 3 open files). When the ceilings set an address-space
    /// limit, every run must set one at or below it.
    pub fn check_within(&self, ceilings: &Limits) -> Result<(), SandboxError> {
        let sane = !self.wall_time.is_zero() && !self.cpu_time.is_zero() && self.open_files >= 3;
        let within = self.wall_time <= ceilings.wall_time
            && self.cpu_time <= ceilings.cpu_time
            && self.file_size <= ceilings.file_size
            && self.open_files <= ceilings.open_files
            && self.log_head <= ceilings.log_head
            && self.log_tail <= ceilings.log_tail
            && match (self.address_space, ceilings.address_space) {
                (_, None) => true,
                (Some(a), Some(c)) => a <= c,
                (None, Some(_)) => false,
            };
        if sane && within {
            Ok(())
        } else {
            Err(SandboxError::LimitOutOfBounds)
        }
    }

    /// Validates limits used as server ceilings.
    pub(crate) fn validate_ceilings(&self) -> Result<(), ConfigError> {
        if self.wall_time.is_zero() {
            return Err(ConfigError::InvalidLimit("wall_time"));
        }
        if self.cpu_time.is_zero() {
            return Err(ConfigError::InvalidLimit("cpu_time"));
        }
        if self.open_files < 3 {
            return Err(ConfigError::InvalidLimit("open_files"));
        }
        Ok(())
    }

    /// `RLIMIT_CPU` seconds: the CPU time rounded up to whole seconds.
    pub(crate) fn cpu_seconds(&self) -> u64 {
        let s = self.cpu_time.as_secs();
        if self.cpu_time.subsec_nanos() > 0 {
            s.saturating_add(1)
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fit_default_ceilings() {
        assert_eq!(
            Limits::default().check_within(&Limits::default_ceilings()),
            Ok(())
        );
    }

    #[test]
    fn each_field_above_its_ceiling_is_refused() {
        let c = Limits::default();
        let cases: [fn(&mut Limits); 8] = [
            |l| l.wall_time += Duration::from_millis(1),
            |l| l.cpu_time += Duration::from_secs(1),
            |l| l.file_size += 1,
            |l| l.open_files += 1,
            |l| l.log_head += 1,
            |l| l.log_tail += 1,
            |l| l.open_files = 2,
            |l| l.wall_time = Duration::ZERO,
        ];
        for f in cases {
            let mut l = c;
            f(&mut l);
            assert_eq!(
                l.check_within(&c),
                Err(SandboxError::LimitOutOfBounds),
                "{l:?}"
            );
        }
    }

    #[test]
    fn address_space_ceiling_requires_a_limit() {
        let c = Limits {
            address_space: Some(1 << 30),
            ..Limits::default()
        };
        assert!(Limits::default().check_within(&c).is_err());
        let l = Limits {
            address_space: Some(1 << 29),
            ..Limits::default()
        };
        assert!(l.check_within(&c).is_ok());
    }

    #[test]
    fn cpu_seconds_round_up() {
        let l = Limits {
            cpu_time: Duration::from_millis(1500),
            ..Limits::default()
        };
        assert_eq!(l.cpu_seconds(), 2);
    }
}
