//! Facts: what holds for CUDA, ROCm and the machine whatever gpuenv's state is (versions,
//! the release tables, layout rules, reserved names). Below everything but the base
//! utilities.

pub mod build_cache;
pub mod cuda_tables;
pub mod driver;
pub mod nvidia_target;
pub mod python;
pub mod reserved;
pub mod torch_headers;
pub mod version;
