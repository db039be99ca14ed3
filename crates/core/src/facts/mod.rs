//! Facts about GPUs and toolkits that hold on any machine: the bottom layer, which reads
//! no process state, disk or network.

pub mod arch;
