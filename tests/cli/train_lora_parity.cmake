# `sft train --use_peft` against TRL's SFTTrainer + PEFT, step by step: for each golden in
# tests/fixtures/lora/ (tools/make_lora_goldens.py: r 8, alpha 16, dropout 0; all seven
# projections or PEFT's default targets; packing off and bfd; GAS 1 and 4; rsLoRA;
# modules_to_save; SmolLM3, OLMo 2 and Granite with all seven; Phi-3 with o_proj and down_proj,
# with its fused qkv_proj and gate_up_proj, and all-linear; Gemma 3 with all seven and with PEFT's
# defaults), run `sft train` from PEFT's initial
# adapter (the golden's flags name its adapter_init folder as --model_name_or_path) and compare
# metrics.jsonl with TRL's values, with the tolerances and the comparison of
# train_trl_parity.cmake (loss and grad_norm 1e-4 relative; observed ≤ 3e-7). The "@base" entries run the same goldens from the base model:
# sft initialises the adapters itself, as TRL + PEFT do for --seed 42, so the curves are
# TRL's to the same tolerance and the adapter_init runs' bit for bit (loss and grad_norm
# printed alike; they parted after step 1 while sft drew its own A).
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch_dir [-DCONFIGS="a;b"]
#        -P train_lora_parity.cmake
cmake_minimum_required(VERSION 3.25)
set(F "${ROOT}/tests/fixtures/lora")
if(NOT CONFIGS)
  set(CONFIGS all7_nopack_gas1 all7_nopack_gas4 all7_bfd_gas1 all7_bfd_gas4 default_nopack_gas1
              rslora_bfd_gas4 save_norm_bfd_gas1 all7_nopack_gas1@base default_nopack_gas1@base
              save_norm_bfd_gas1@base smollm3_all7_bfd_gas4 smollm3_all7_bfd_gas4@base
              olmo2_all7_bfd_gas4 olmo2_all7_bfd_gas4@base granite_all7_bfd_gas4
              granite_all7_bfd_gas4@base phi3_o_down_bfd_gas4 phi3_o_down_bfd_gas4@base
              phi3_fused_bfd_gas4 phi3_fused_bfd_gas4@base phi3_all_linear_bfd_gas4
              phi3_all_linear_bfd_gas4@base gemma3_all7_bfd_gas4 gemma3_all7_bfd_gas4@base
              gemma3_default_bfd_gas4 gemma3_default_bfd_gas4@base)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/train_trl_parity.cmake")
