//! Buffers: creation with out-of-memory and limit errors that name the
//! buffer, the grow-only [`Reusable`] buffers kept across calls, the readback
//! buffers of the submissions in flight, and mapping a readback buffer to read
//! it on the host.

use crate::errors::device_error;
use crate::submit::wait;
use crate::{BACKEND_NAME, WgpuBackend};
use prism_core::Error;
use std::sync::mpsc;

/// A buffer that grows on demand and is reused across calls.
#[derive(Default)]
pub(crate) struct Reusable {
    pub(crate) buffer: Option<wgpu::Buffer>,
}

impl WgpuBackend {
    /// `slot` holds a buffer of at least `size` bytes with `usage`.
    pub(crate) fn ensure(
        device: &wgpu::Device,
        slot: &mut Reusable,
        label: &'static str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, Error> {
        if let Some(b) = &slot.buffer
            && b.size() >= size
        {
            return Ok(b.clone());
        }
        // Drop the old one first so both never hold memory at once.
        slot.buffer = None;
        let b = create_buffer(device, label, size, usage)?;
        slot.buffer = Some(b.clone());
        Ok(b)
    }

    /// The first `slots` readback buffers, each of at least `size` bytes
    /// (rounded up to 16), one per submission in flight.
    pub(crate) fn readback_slots(
        &mut self,
        label: &'static str,
        slots: usize,
        size: u64,
    ) -> Result<Vec<wgpu::Buffer>, Error> {
        let mut readback = Vec::with_capacity(slots);
        for slot in 0..slots {
            readback.push(Self::ensure(
                &self.device,
                &mut self.readback_buf[slot],
                label,
                size.next_multiple_of(16),
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            )?);
        }
        Ok(readback)
    }
}

/// Create a buffer; out-of-memory and limit errors name it and its size.
pub(crate) fn create_buffer(
    device: &wgpu::Device,
    label: &'static str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> Result<wgpu::Buffer, Error> {
    let limit = device.limits().max_buffer_size;
    if size > limit {
        return Err(Error::DeviceLimit {
            backend: BACKEND_NAME,
            what: label,
            needed: size,
            limit,
        });
    }
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16),
        usage,
        mapped_at_creation: false,
    });
    let validation = pollster::block_on(validation.pop());
    let oom = pollster::block_on(oom.pop());
    if oom.is_some() {
        return Err(Error::OutOfMemory {
            backend: BACKEND_NAME,
            what: label,
            bytes: size,
        });
    }
    if let Some(e) = validation {
        return Err(device_error(
            "create a buffer",
            format!("{label} ({size} bytes): {e}"),
        ));
    }
    Ok(buffer)
}

/// Map the first `size` bytes of `buffer` for reading, hand them to `read`, unmap.
///
/// `after` is the submission that last wrote the buffer; waiting for it (done
/// already, in practice) lets wgpu complete the mapping without waiting for
/// later submissions still in flight.
pub(crate) fn map_and_read(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    size: u64,
    after: wgpu::SubmissionIndex,
    operation: &'static str,
    read: impl FnOnce(&[u8]),
) -> Result<(), Error> {
    if size == 0 {
        read(&[]);
        return Ok(());
    }
    let mapped = size.next_multiple_of(4);
    let slice = buffer.slice(..mapped);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        // The receiver lives until after the wait below; a failed send only
        // means the call already returned with an error.
        let _ = tx.send(r);
    });
    wait(device, Some(after), operation)?;
    match rx.try_recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(device_error(
                operation,
                format!("mapping the readback buffer: {e}"),
            ));
        }
        Err(_) => {
            return Err(device_error(
                operation,
                "mapping the readback buffer did not complete",
            ));
        }
    }
    {
        let view = slice
            .get_mapped_range()
            .map_err(|e| device_error(operation, format!("reading the mapped buffer: {e}")))?;
        read(&view[..size as usize]);
    }
    buffer.unmap();
    Ok(())
}
