//! The stacks of a launch's `clone` children.

use std::io;

/// The stacks of a launch's `clone` children, the init's
/// (`clone(CLONE_VM)`, `monitor::spawn_init`) and the solver's
/// (`clone(CLONE_VM | CLONE_VFORK)`, `solver::spawn_solver`): one mapping, made
/// once by the sandbox at start and shared by every launch, each stack with
/// an inaccessible guard page below it, so that an overflow faults instead
/// of writing into the memory it shares. The server never touches it: each
/// launch's monitor inherits its own private copy at the fork (untouched
/// pages, so nothing is copied), and only that copy is ever used as a
/// stack. No launch maps, protects or unmaps anything in the server (each
/// of which, in a process of many threads, interrupts every CPU that runs
/// one of them to flush its TLB).
pub(crate) struct CloneStack {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; the server never reads
// or writes it (only the forked processes' copies are used as a stack).
unsafe impl Send for CloneStack {}
// SAFETY: as above; `&CloneStack` gives access to nothing but its address.
unsafe impl Sync for CloneStack {}

impl std::fmt::Debug for CloneStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CloneStack({} bytes)", self.len)
    }
}

impl CloneStack {
    /// Usable bytes of each stack: the init and the solver make a few dozen
    /// system calls from small frames; 128 KiB is many times what that
    /// needs.
    const USABLE: usize = 128 * 1024;

    /// Maps fresh stacks (their pages cost nothing until they are touched):
    /// the init's in the lower half, the solver's in the upper.
    pub(crate) fn new() -> io::Result<Self> {
        use rustix::mm::{MapFlags, MprotectFlags, ProtFlags, mmap_anonymous, mprotect};
        let page = rustix::param::page_size();
        let half = Self::USABLE + page;
        let len = 2 * half;
        let rw = ProtFlags::READ | ProtFlags::WRITE;
        let flags = MapFlags::PRIVATE | MapFlags::STACK;
        // SAFETY: a fresh private anonymous mapping at an address the kernel
        // picks; nothing else refers to it.
        let base = unsafe { mmap_anonymous(std::ptr::null_mut(), len, rw, flags) }?;
        let stacks = Self { base, len };
        // A stack grows down: the lowest page of each half is its guard.
        for lowest in [base, base.wrapping_byte_add(half)] {
            // SAFETY: the first page of a half of the mapping made above.
            unsafe { mprotect(lowest, page, MprotectFlags::empty()) }?;
        }
        Ok(stacks)
    }

    /// The top of the init's stack ([`stack_top`]).
    pub(super) fn init_top(&self) -> *mut libc::c_void {
        stack_top((self.base as usize).saturating_add(self.len / 2))
    }

    /// The top of the solver's stack ([`stack_top`]).
    pub(super) fn solver_top(&self) -> *mut libc::c_void {
        stack_top((self.base as usize).saturating_add(self.len))
    }
}

/// The top of a stack whose memory ends at `end`, 16-byte aligned, as the
/// C library's `clone` wants it (the stack grows down on every architecture
/// this crate builds for).
pub(super) fn stack_top(end: usize) -> *mut libc::c_void {
    (end & !15) as *mut libc::c_void
}

impl Drop for CloneStack {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping this value owns, once.
        let _ = unsafe { rustix::mm::munmap(self.base, self.len) };
    }
}
