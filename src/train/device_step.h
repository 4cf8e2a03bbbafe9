// The trainer's step on a device (a model moved by Transformer::to_device; one process per
// GPU): what runs there and what is refused, and the host copies a checkpoint is written from.
//
// On the device: forward and backward (the model's activation arenas are there), the gradient
// norm (ops::sum_of_squares on the gradient arena: the CPU kernel's order, so the CPU's bits),
// clipping folded into AdamW (optim/adamw.h with its moments in a device arena) and the bf16
// copies the update rounds, NEFTune's noise (drawn there, the CPU's bits); fp32 or bf16 compute
// (bf16: the stacked q/k/v product's column blocks go to the CUDA cast and rope as they
// do on the CPU). Only the loss statistics, the norm and the token ids cross the bus per step.
// Several data-parallel ranks, ZeRO-1 and tensor parallelism combine over NCCL on the device
// (parallel/device_comm.h, made by the trainer: trainer_parallel.cpp). Refused, each with
// "... is not on the CUDA device yet (hint: --use_cpu)": ZeRO-2 and 3. LoRA runs there: the
// adapters move with the model (model/lora.h), their dropout drawn there (ops::dropout).
//
// Checkpoints: host_copy streams the weights into a host model; AdamW::copy_to(kCpu) the
// moments. The files are then written as a CPU run writes them (atomically, checkpoint_dir.h),
// so a checkpoint of a device run resumes on either device, and on the device bit for bit.
#pragma once

#include "model/transformer.h"
#include "parallel/comm.h"
#include "train/args.h"

namespace sft {

// Fails naming the first feature of this run that does not run on the model's device yet;
// nothing for a model on the CPU.
void check_device_training(const TrainingArgs& args, const model::Transformer& model,
                           const Comm& dp, const Comm* tp);

// The model's trainable fp32 weights in a new host model of the same configuration: the whole
// model, or with LoRA adapters of the same configuration holding the trained values (the base
// left zero: a LoRA checkpoint holds the adapters alone). A tensor-parallel model's copy holds
// this rank's slices (train/tp_gather.h makes them whole).
model::Transformer host_copy(const model::Transformer& model);

}  // namespace sft
