"""Train TRL's ``GRPOTrainer`` for two steps, on the CPU, on rows made by agent_rollout.

The path a trainer takes from seed prompts to gradient steps, with nothing downloaded:

1. the bundled seed prompts -> ``launch_rollout("openenv", ...)`` -> rows (the drill
   environment's chat prompts, each with its reference ``answer``);
2. rows -> JSONL (``json.dumps``, one row a line) -> ``normalise_rollout_file(jsonl,
   "rows.parquet")``;
3. ``datasets.load_dataset("parquet", ...)`` -> the trainer's ``train_dataset``;
4. a two-layer Qwen2 model with random weights, and a byte-level BPE tokenizer trained here
   on the rows' own text, with a ChatML chat template;
5. ``GRPOTrainer`` with one reward function, which reads the dataset's ``answer`` column:
   1.0 when the completion contains the reference answer, else 0.0.

It prints what it did (rows, steps, the rewards seen, the loss) and exits 0 when the trainer
took the steps asked for. The point is the path, not the learning: a random model rarely
writes the answer, so most rewards are 0.0. The logged loss is 0.0 even on a step with
rewards: each batch is used once (the policy ratio is 1), GRPO's advantages sum to zero in
each group, and every completion here runs to ``max_completion_length``, so their token mean
is exactly 0. The gradient is not zero then (its norm is printed); on a step whose groups
all score alike, it is.

Needs torch, trl 1.16, datasets and pyarrow beside agent_rollout; ``scripts/setup_train_venv.sh``
makes such a venv (docs/training.md). Run::

    python examples/train_grpo.py [--steps 2] [--online] [--output-dir DIR] [--seed 0]

``--online`` plays the rollout through the OpenEnv drill server (needs openenv-core), started
on 127.0.0.1 for the run, in place of the same rows built offline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from contextlib import ExitStack
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

# Nothing is fetched from a hub: set before transformers, datasets or huggingface_hub load.
for _name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import agent_rollout  # noqa: E402

OFFLINE_FUNC = "agent_rollout.examples.openenv_rollout:offline_rollout"
ONLINE_FUNC = "agent_rollout.examples.openenv_rollout:rollout"

# ChatML, as Qwen2 models use it; the generation prompt opens the assistant's turn.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Byte-level BPE over the bytes the corpus has (about 60) plus merges: a small vocabulary, so
# that a random model writes a digit now and then and not every reward is 0.0.
VOCAB_SIZE = 128

Row = dict[str, Any]
Call = tuple[list[Any], list[str], list[float]]  # answers, completion texts, rewards


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps (default 2)")
    parser.add_argument(
        "--online",
        action="store_true",
        help="play the rollout through the OpenEnv drill server (needs openenv-core)",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        help="keep the rows, the Parquet file and the trainer's output here "
        "(default: a temporary folder, removed at the end)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the model and the trainer")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    return args


# ---- rows: launch_rollout, then JSONL, then Parquet -------------------------------------


def make_rows(online: bool) -> tuple[list[Row], str]:
    """Rows from ``launch_rollout`` on the bundled seed prompts, and how they were made."""
    with as_file(files("agent_rollout.examples").joinpath("prompts.jsonl")) as path:
        seeds = agent_rollout.read_rollout_jsonl(path)
    with ExitStack() as stack:
        if online:
            from agent_rollout.examples.openenv_rollout import URL_ENV_VAR, serve_drill_env

            url = stack.enter_context(serve_drill_env())
            os.environ[URL_ENV_VAR] = url
            func, how = ONLINE_FUNC, f"the OpenEnv drill server at {url}"
        else:
            func, how = OFFLINE_FUNC, "offline_rollout (the drill's rows, no server)"
        result = agent_rollout.launch_rollout("openenv", prompts=list(seeds), rollout_func=func)
    return list(result.rows), f"{len(seeds)} seed prompts, {how}"


def write_parquet(rows: list[Row], folder: Path) -> Path:
    """Rows -> JSONL with ``json.dumps`` -> ``normalise_rollout_file`` -> Parquet."""
    jsonl = folder / "rollouts.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    parquet = folder / "rows.parquet"
    report = agent_rollout.normalise_rollout_file(jsonl, parquet)
    print(
        f"parquet: {report.rows} rows, {parquet.stat().st_size:,} bytes in "
        f"{report.seconds * 1000:.1f} ms -> {parquet}"
    )
    return parquet


# ---- a tokenizer and a model made here ---------------------------------------------------


def corpus_of(dataset: Any) -> list[str]:
    """Every text of the rows: message contents (or str prompts) and answers."""
    texts = ["system", "user", "assistant", "0123456789"]
    for row in dataset:
        prompt = row["prompt"]
        texts.extend([prompt] if isinstance(prompt, str) else [m["content"] or "" for m in prompt])
        texts.append(row["answer"] or "")
    return texts


def make_tokenizer(corpus: list[str]) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus``, with a ChatML chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False
        ),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
    )


def make_model(tokenizer: Any, seed: int) -> Any:
    """A two-layer Qwen2 model with random weights, sized for a CPU."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


# ---- the reward and the report -----------------------------------------------------------


def completion_text(completion: Any) -> str:
    """A completion's text: a str (standard prompts) or assistant messages (conversational)."""
    if isinstance(completion, str):
        return completion
    return "".join(message.get("content") or "" for message in completion)


def answer_reward_recording(calls: list[Call]) -> Any:
    """The reward function, which also records what it saw in ``calls``."""

    def answer_reward(
        prompts: list[Any], completions: list[Any], answer: list[str | None], **_: Any
    ) -> list[float]:
        """1.0 when the completion contains the row's reference answer, else 0.0."""
        texts = [completion_text(completion) for completion in completions]
        rewards = [
            1.0 if ref is not None and ref in text else 0.0
            for text, ref in zip(texts, answer, strict=True)
        ]
        calls.append((list(answer), texts, rewards))
        return rewards

    return answer_reward


def print_steps(log_history: list[dict[str, Any]], calls: list[Call], group: int) -> None:
    """One line per step (loss, gradient norm, reward), then one per prompt of the step."""
    logged = [entry for entry in log_history if "loss" in entry]
    # One generation batch per step here (steps_per_generation is 1): call i is step i + 1.
    for entry, (answers, texts, rewards) in zip(logged, calls, strict=False):
        print(
            f"step {entry['step']}: loss {entry['loss']:.6f}, grad norm "
            f"{entry.get('grad_norm', float('nan')):.6f}, reward mean "
            f"{entry.get('reward', float('nan')):.3f} (std "
            f"{entry.get('reward_std', float('nan')):.3f})"
        )
        for start in range(0, len(texts), group):
            part = slice(start, start + group)
            hits = [text for text, reward in zip(texts[part], rewards[part], strict=True) if reward]
            example = f"; rewarded: {hits[0]!r}" if hits else ""
            print(f"  answer {answers[start]!r}: rewards {rewards[part]}{example}")


# ---- the run -----------------------------------------------------------------------------


def run(args: argparse.Namespace, folder: Path) -> int:
    started = time.perf_counter()
    try:
        import datasets
        import torch
        import transformers
        import trl
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:
        print(
            f"train_grpo: {exc}; this example needs torch, trl 1.16, datasets and pyarrow "
            "(scripts/setup_train_venv.sh makes a venv with them)",
            file=sys.stderr,
        )
        return 2
    imports_seconds = time.perf_counter() - started
    transformers.logging.set_verbosity_error()
    # TRL 1.16 calls transformers 5's deprecated gradient_checkpointing names; not ours to fix.
    warnings.filterwarnings(
        "ignore", message=r".*deprecated and will be removed in v6", category=FutureWarning
    )
    datasets.disable_progress_bars()
    print(
        f"versions: agent-rollout {agent_rollout.__version__} ({agent_rollout.implementation()} "
        f"engine), trl {trl.__version__}, transformers {transformers.__version__}, torch "
        f"{torch.__version__}, datasets {datasets.__version__}"
    )

    try:
        rows, how = make_rows(args.online)
    except ImportError as exc:  # --online without openenv-core
        print(f"train_grpo: {exc}", file=sys.stderr)
        return 2
    print(f"rollout: openenv, {how} -> {len(rows)} rows")
    parquet = write_parquet(rows, folder)
    dataset = datasets.load_dataset(
        "parquet", data_files=str(parquet), split="train", cache_dir=str(folder / "datasets")
    )
    print(
        f"dataset: {dataset.num_rows} rows, columns {dataset.column_names}, answers "
        f"{list(dataset['answer'])}"
    )

    tokenizer = make_tokenizer(corpus_of(dataset))
    rendered = tokenizer.apply_chat_template(
        dataset[0]["prompt"], tokenize=False, add_generation_prompt=True
    )
    prompt_tokens = len(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    model = make_model(tokenizer, args.seed)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    print(
        f"model: Qwen2ForCausalLM, 2 layers, hidden size 64, {parameters:,} parameters, "
        f"random weights; tokenizer: byte-level BPE, vocabulary {len(tokenizer)}, "
        f"row 0 renders as {prompt_tokens} prompt tokens"
    )

    calls: list[Call] = []
    group = 4  # completions per prompt
    config = GRPOConfig(
        output_dir=str(folder / "trainer"),
        max_steps=args.steps,
        per_device_train_batch_size=8,
        num_generations=group,  # 8 completions a step: 2 prompts, 4 completions each
        max_completion_length=16,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_vllm=False,
        use_cpu=True,
        bf16=False,
        fp16=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=answer_reward_recording(calls),
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    # The Trainer prints each log dict; print_steps says the same, one line a step.
    trainer.remove_callback(transformers.PrinterCallback)
    train_started = time.perf_counter()
    output = trainer.train()
    train_seconds = time.perf_counter() - train_started

    print_steps(trainer.state.log_history, calls, group)
    flat = [reward for _, _, rewards in calls for reward in rewards]
    print(
        f"trained {trainer.state.global_step} steps in {train_seconds:.1f} s: "
        f"{len(flat)} completions, {sum(flat):g} rewarded 1.0; training loss "
        f"{output.training_loss:.6f}; {time.perf_counter() - started:.1f} s in all "
        f"({imports_seconds:.1f} s of it importing torch, transformers and TRL)"
    )
    if trainer.state.global_step != args.steps:
        print(f"train_grpo: {trainer.state.global_step} steps, not {args.steps}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.output_dir is not None:
        folder = args.output_dir.resolve()
        folder.mkdir(parents=True, exist_ok=True)
        status = run(args, folder)
        print(f"kept: {folder}")
        return status
    with tempfile.TemporaryDirectory(prefix="train-grpo-") as temporary:
        return run(args, Path(temporary))


if __name__ == "__main__":
    sys.exit(main())
