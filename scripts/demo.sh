#!/usr/bin/env bash
# The main job: set up and build the zerotune binary (nothing else), then fine-tune the tiny
# Qwen2 model shipped in examples/ on the shipped alpaca data with the shipped DeepSpeed config
# (bf16 "auto": bf16 on a GPU, float32 on the CPU), and ask the result one of the training
# questions. That config is the one to pass to several GPUs, where it partitions gradients
# and optimizer state (ZeRO stage 2); this run has one rank, where ZeRO has nothing to split
# and training runs as stage 0. Output goes to ${ZT_DEMO_OUTPUT:-demo-output}/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" zerotune
OUTPUT=${ZT_DEMO_OUTPUT:-$ZT_ROOT/demo-output}
precision=()
device="the CPU"
if nvidia-smi -L >/dev/null 2>&1; then
  precision=(--bf16)
  device="the GPU"
fi
echo "== fine-tuning examples/tiny-qwen on examples/data/alpaca_demo.json: 200 steps on $device" \
  "(about 20 s on a CPU), output in $OUTPUT"
"$ZT_BUILD_DIR/bin/zerotune" train "${precision[@]}" --deepspeed "$ZT_ROOT/examples/ds_config_zero2.json" \
  --model_name_or_path "$ZT_ROOT/examples/tiny-qwen" \
  --train_file "$ZT_ROOT/examples/data/alpaca_demo.json" \
  --output_dir "$OUTPUT" --overwrite_output_dir \
  --finetuning_type full --template qwen \
  --max_steps 200 --per_device_train_batch_size 4 \
  --learning_rate 5e-3 --lr_scheduler_type constant_with_warmup --warmup_steps 5 \
  --logging_steps 25 --save_steps 100 --save_total_limit 1
echo
echo "== asking the fine-tuned model one of its training questions"
echo "Q: Spell out the digits. 0 4"
printf 'A: '
"$ZT_BUILD_DIR/bin/zerotune" generate --model_name_or_path "$OUTPUT" --max_new_tokens 20 --template qwen \
  --prompt $'Spell out the digits.\n0 4' | tr -s '\n' ' '
echo
