//! Submissions and their timing: how many are in flight and how large frames
//! and batches are cut into bands ([`SLOTS`], [`PIPELINE_BAND_BYTES`]),
//! submitting and waiting (a device lost while waiting is an error, not a
//! panic), and each submission's trace time from GPU [`Timestamps`] or, where
//! there are none, from the host clock ([`host_span`]).

use crate::WgpuBackend;
use crate::buffers::map_and_read;
use crate::errors::device_error;
use prism_core::{Error, RenderStats, TimingSource};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Submissions in flight during a pipelined render (see `render_inner`).
pub(crate) const SLOTS: usize = 2;
/// A render whose output, or a batch whose rays, exceed two bands of this size
/// (or of [`WgpuOptions::max_chunk_bytes`](crate::WgpuOptions::max_chunk_bytes)
/// if smaller) is split into bands of at least that size, so that moving one
/// between host and device overlaps tracing the next.
pub(crate) const PIPELINE_BAND_BYTES: u64 = 16 << 20;
/// Bands a large pipelined frame is cut into (fewer if they would fall below
/// [`PIPELINE_BAND_BYTES`]).
pub(crate) const PIPELINE_BANDS: u64 = 8;
/// Bands a large pipelined batch is cut into: each dispatch ends in a tail of
/// long rays with most lanes idle, so batches take fewer, larger bands than
/// frames (4M diffuse rays on an H100: 4 bands double the whole call's rate
/// over 1 and cost 14% of trace time, 8 bands cost 30%).
pub(crate) const BATCH_BANDS: u64 = 4;

/// GPU timestamp queries at the start and end of each compute pass.
pub(crate) struct Timestamps {
    pub(crate) set: wgpu::QuerySet,
    pub(crate) resolve: wgpu::Buffer,
    /// One per submission in flight (see [`SLOTS`]).
    pub(crate) readback: [wgpu::Buffer; SLOTS],
    /// Nanoseconds per tick.
    pub(crate) period: f64,
}

impl WgpuBackend {
    /// Submit `encoder`; returns its index and when it was submitted.
    pub(crate) fn submit(&self, encoder: wgpu::CommandEncoder) -> (wgpu::SubmissionIndex, Instant) {
        let at = Instant::now();
        (self.queue.submit([encoder.finish()]), at)
    }

    /// Wait for a submission recorded with timestamp slot `slot` and add its
    /// trace time to `stats.trace`: from the timestamps when available, else
    /// the host time from submission to completion ([`host_span`]: with several
    /// submissions in flight, not counting the time the previous one still
    /// ran), and then `stats.timing` says [`TimingSource::HostClock`]. Returns
    /// when the wait ended, to pass as the next call's `previous_done`.
    pub(crate) fn finish_trace(
        &self,
        index: wgpu::SubmissionIndex,
        submitted: Instant,
        previous_done: Option<Instant>,
        slot: usize,
        operation: &'static str,
        stats: &mut RenderStats,
    ) -> Result<Instant, Error> {
        wait(&self.device, Some(index.clone()), operation)?;
        let done = Instant::now();
        let host = host_span(submitted, previous_done, done);
        let Some(ts) = &self.timestamps else {
            stats.trace += host;
            return Ok(done);
        };
        let mut ticks = [0u64; 2];
        map_and_read(
            &self.device,
            &ts.readback[slot],
            16,
            index,
            operation,
            |bytes| {
                ticks.copy_from_slice(bytemuck::cast_slice(bytes));
            },
        )?;
        let elapsed = ticks[1].saturating_sub(ticks[0]) as f64 * ts.period;
        // A zero or absurd reading (some drivers) falls back to the host time.
        if elapsed > 0.0 && elapsed < host.as_secs_f64() * 1e9 * 1.5 + 1e6 {
            stats.trace += Duration::from_nanos(elapsed as u64);
        } else {
            stats.trace += host;
            stats.timing = TimingSource::HostClock;
        }
        Ok(done)
    }
}

/// Host-measured trace time of a submission that finished at `done`: from its
/// submission, or from the end of the previous submission's wait when that came
/// later. The queue runs submissions in order, so with two in flight the later
/// one cannot start before the earlier one ends; counting from its submission
/// would count the earlier one's remaining time twice.
pub(crate) fn host_span(
    submitted: Instant,
    previous_done: Option<Instant>,
    done: Instant,
) -> Duration {
    let from = previous_done.map_or(submitted, |p| p.max(submitted));
    done.saturating_duration_since(from)
}

/// Block until `index` (or all work) finished. wgpu panics on a device error
/// while polling; that panic is caught here and reported as a lost device.
pub(crate) fn wait(
    device: &wgpu::Device,
    index: Option<wgpu::SubmissionIndex>,
    operation: &'static str,
) -> Result<(), Error> {
    let poll = catch_unwind(AssertUnwindSafe(|| {
        device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: None,
        })
    }));
    match poll {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(device_error(operation, format!("waiting for the GPU: {e}"))),
        Err(_) => Err(device_error(
            operation,
            "the GPU device failed while waiting (device lost); create a new WgpuBackend",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::host_span;
    use std::time::{Duration, Instant};

    #[test]
    fn host_span_does_not_count_overlapping_submissions_twice() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Two bands submitted together at t0; the first is waited for until
        // 10 ms, the second until 20 ms. The two spans add up to the 20 ms
        // the queue was busy, not 10 + 20.
        let first = host_span(t0, None, t0 + ms(10));
        let second = host_span(t0, Some(t0 + ms(10)), t0 + ms(20));
        assert_eq!(first, ms(10));
        assert_eq!(second, ms(10));
        assert_eq!(first + second, ms(20));
        // Submitted after the previous wait ended: counted from submission.
        assert_eq!(
            host_span(t0 + ms(25), Some(t0 + ms(20)), t0 + ms(30)),
            ms(5)
        );
        // A wait that ended before `from` (clock order) is zero, not a panic.
        assert_eq!(host_span(t0 + ms(5), None, t0), Duration::ZERO);
    }
}
