//! Heap allocations per frame in steady state (F-OPT-06): `World::step`,
//! `World::save_into`, `SnapshotRing::save` and `World::load` on the reference arena must not
//! allocate once it has warmed up.
//!
//! The test binary's global allocator counts allocations (and reallocations) made on the current
//! thread while a counting scope is open, so tests running in parallel do not see each other's
//! allocations. To find out where an allocation comes from, run with `ALLOC_TRACE=1`: every
//! counted allocation prints a backtrace to stderr, for example
//!
//! ```sh
//! ALLOC_TRACE=1 cargo test --release --test integration alloc:: -- --ignored --nocapture
//! ```

use rollback_abilities::SnapshotRing;
use rollback_abilities_kit::arena::{Arena, ArenaSpec};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct CountingAllocator;

thread_local! {
    /// A counting scope is open on this thread.
    static ARMED: Cell<bool> = const { Cell::new(false) };
    /// Allocations counted in the open scope.
    static COUNT: Cell<u64> = const { Cell::new(0) };
    /// Print a backtrace for every counted allocation.
    static TRACE: Cell<bool> = const { Cell::new(false) };
    /// Inside the tracer (its own allocations are not counted).
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
    /// Live-byte accounting is on for this thread (see [`live_bytes`]).
    static LIVE_ARMED: Cell<bool> = const { Cell::new(false) };
    /// Bytes allocated minus bytes freed on this thread while `LIVE_ARMED`.
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn live(delta: i64) {
    if LIVE_ARMED.try_with(Cell::get).unwrap_or(false) {
        let _ = LIVE.try_with(|c| c.set(c.get() + delta));
    }
}

/// Turns live-byte accounting on or off for this thread and returns the net bytes allocated
/// (allocated minus freed) on it since accounting was last started. Used by the soak test
/// (`tests/soak.rs`) to show memory stays bounded over a long match.
pub fn live_bytes(on: bool) -> i64 {
    let n = LIVE.with(Cell::get);
    if on && !LIVE_ARMED.with(Cell::get) {
        LIVE.with(|c| c.set(0));
    }
    LIVE_ARMED.with(|a| a.set(on));
    n
}

fn note(size: usize) {
    let armed = ARMED.try_with(Cell::get).unwrap_or(false);
    if !armed || IN_TRACE.try_with(Cell::get).unwrap_or(true) {
        return;
    }
    let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    if TRACE.try_with(Cell::get).unwrap_or(false) {
        let _ = IN_TRACE.try_with(|t| t.set(true));
        let bt = std::backtrace::Backtrace::force_capture();
        eprintln!("---- counted allocation of {size} bytes ----\n{bt}");
        let _ = IN_TRACE.try_with(|t| t.set(false));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the only
// extra work touches const-initialised thread-local `Cell`s, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        live(layout.size() as i64);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        live(layout.size() as i64);
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        live(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        live(-(layout.size() as i64));
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `f` with counting on (this thread only) and returns its result and the allocations.
fn counted<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let trace = std::env::var_os("ALLOC_TRACE").is_some_and(|v| v != "0");
    TRACE.with(|t| t.set(trace));
    COUNT.with(|c| c.set(0));
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    (r, COUNT.with(Cell::get))
}

/// A 64-fighter arena (same content and per-fighter shape as the 256-fighter reference; the
/// count only changes how long the test takes) stepped `frames` past its warm-up.
fn warm_arena(frames: u32) -> Arena {
    let mut a = Arena::new(ArenaSpec { entities: 64, ..ArenaSpec::default() });
    for _ in 0..frames {
        a.step();
    }
    a
}

/// The counting allocator itself: counts on this thread, only inside a scope.
#[test]
fn counter_counts_only_inside_the_scope() {
    let (v, n) = counted(|| vec![1u8; 100]);
    assert_eq!(n, 1);
    let (_, n) = counted(|| v.len());
    assert_eq!(n, 0);
    // Allocations between scopes are not carried into the next one.
    let outside: Vec<u8> = Vec::with_capacity(10);
    let (_, n) = counted(|| outside.capacity());
    assert_eq!(n, 0);
}

#[test]
fn save_and_ring_save_do_not_allocate() {
    let mut a = warm_arena(60);
    let mut snap = a.world.snapshot();
    let mut ring = SnapshotRing::new(&a.world, 10);
    let ((), n) = counted(|| {
        for _ in 0..20 {
            let _ = a.world.save_into(&mut snap);
            ring.save(&a.world);
            let _ = a.world.checksums();
            let _ = a.world.save_into_checksummed(&mut snap);
            let _ = ring.save_checksummed(&a.world);
        }
    });
    assert_eq!(
        n, 0,
        "save_into / SnapshotRing::save / checksums / the one-pass forms allocated {n} times in 20 saves"
    );
    // The one-pass save gives the checksums of what it saved, equal to a separate pass.
    for _ in 0..30 {
        a.step();
        let sums = ring.save_checksummed(&a.world);
        assert_eq!(sums, a.world.checksums());
        assert_eq!(a.world.save_into_checksummed(&mut snap), Ok(sums));
        assert_eq!(snap.checksums(), sums);
    }
    // Saving stays allocation-free while the world moves on (different ring slots).
    let mut total = 0;
    for _ in 0..10 {
        a.step();
        let ((), n) = counted(|| {
            ring.save(&a.world);
        });
        total += n;
    }
    assert_eq!(total, 0);
}

#[test]
fn load_does_not_allocate() {
    let mut a = warm_arena(60);
    let mut ring = SnapshotRing::new(&a.world, 10);
    let start = a.world.next_frame();
    for _ in 0..8 {
        ring.save(&a.world);
        a.step();
    }
    let ((), n) = counted(|| {
        for f in start..start + 8 {
            assert!(ring.load(&mut a.world, f));
        }
    });
    assert_eq!(n, 0, "World::load allocated {n} times in 8 loads");
    let snap = a.world.snapshot();
    let (r, n) = counted(|| a.world.load(&snap));
    assert!(r.is_ok());
    assert_eq!(n, 0);
}

/// Steady-state stepping: after a warm-up covering every schedule of the arena (timed effects
/// up to 240 frames, ability periods up to 160), 240 more frames must not allocate, with both
/// players pressing inputs and the scripted fighters activating abilities that cancel others
/// (the input-bound ability list of P4 and the cancelled-ability list of an activation are
/// reused scratch buffers, docs/performance.md "Heap allocations").
#[test]
fn step_does_not_allocate_in_steady_state() {
    let mut a = warm_arena(480);
    let mut per_frame = Vec::with_capacity(240);
    for _ in 0..240 {
        let ((), n) = counted(|| {
            a.step();
        });
        per_frame.push(n);
    }
    let total: u64 = per_frame.iter().sum();
    let frames = per_frame.iter().filter(|n| **n > 0).count();
    assert_eq!(total, 0, "World::step allocated {total} times in {frames} of 240 frames");
}

/// What is known to allocate today, pinned so a new allocation site shows up as a failure:
/// with no player input (no input edges) and without the `Heavy` activations whose
/// `cancel_abilities_with_tags` goes through `specs_matching`, stepping the arena does not
/// allocate. The scripted fighters still run everything else (periodic effects, expiry and
/// re-application, tasks, timelines, damage executions, cues, inhibition).
#[test]
fn step_allocates_only_at_the_known_sites() {
    let mut a = warm_arena(480);
    let mut total = 0;
    for _ in 0..240 {
        // Fighters 0 and 1 get no input, and no fighter tries `Heavy` this frame (the scripted
        // schedule is skipped for it by cancelling the slot's handle for the frame).
        let heavy: Vec<_> =
            a.fighters.iter().map(|e| a.world.component(*e).unwrap().abilities[2]).collect();
        for e in &a.fighters {
            a.world.component_mut(*e).unwrap().abilities[2] =
                rollback_abilities::AbilityHandle::NONE;
        }
        let ((), n) = counted(|| {
            a.world.step(&[0, 0]);
        });
        for (e, h) in a.fighters.iter().zip(heavy) {
            a.world.component_mut(*e).unwrap().abilities[2] = h;
        }
        total += n;
    }
    assert_eq!(total, 0, "World::step allocated {total} times outside the known sites");
}
