// LLaMA-Factory's merge and inference files (tests/data/args/llama_factory/, as published) given
// to export, generate, chat and serve as `llamafactory-cli export|chat|api FILE` takes them
// (cli/arguments_file.h), run as a user runs them on the shipped tiny model (CPU): each run
// from a folder holding the file's adapter at the file's own relative path, the model's hub id
// overridden with the tiny model after the file. What the file says is what the flags say.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensor/safetensors/safetensors.h"
#include "tensor/tensor.h"
#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;

const std::string kFiles = std::string(ZT_SOURCE_DIR) + "/tests/data/args/llama_factory/";
const fs::path kAdapter = fs::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2_lora";
const std::string kTinyModel = " --model_name_or_path " + testing::kTinyQwen;

// The largest difference between two weights files' tensors of one name (they hold the same names).
double largest_difference(const fs::path& a, const fs::path& b) {
  const SafetensorsFile x = SafetensorsFile::open(a.string()), y = SafetensorsFile::open(b.string());
  EXPECT_EQ(x.names().size(), y.names().size());
  double largest = 0;
  for (const std::string& name : x.names()) largest = std::max(largest, max_abs_diff(x.get(name), y.get(name)));
  return largest;
}

class ArgumentsFileCommands : public testing::FolderTest {
 protected:
  // The adapter where LLaMA-Factory's files name it (saves/qwen3-4b/lora/sft), relative to dir_.
  void SetUp() override {
    FolderTest::SetUp();
    fs::create_directories(dir_ / "saves/qwen3-4b/lora");
    fs::copy(kAdapter, dir_ / "saves/qwen3-4b/lora/sft", fs::copy_options::recursive);
  }

  // `zerotune <arguments>` run from dir_, where the files' relative paths lead.
  CliRun zerotune(const std::string& arguments) const {
    return testing::run_zerotune(arguments, dir_, "cd " + dir_.string() + " &&");
  }

  std::string generate_ids(const std::string& arguments) {
    const CliRun run = zerotune("generate " + arguments +
                                " --device cpu --prompt \"a b c\" --output_format ids "
                                "--max_new_tokens 6");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    std::istringstream lines(run.output);
    for (std::string line; std::getline(lines, line);)
      if (line.size() > 1 && line[0] == '[' && std::isdigit(static_cast<unsigned char>(line[1]))) return line;
    ADD_FAILURE() << "no ids in:\n" << run.output;
    return "";
  }
};

TEST_F(ArgumentsFileCommands, ExportMergesTheFilesAdapterIntoItsExportDir) {
  const CliRun merged = zerotune("export " + kFiles + "merge_qwen3_lora_sft.yaml" + kTinyModel);
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_NE(merged.output.find("merged the LoRA adapter saves/qwen3-4b/lora/sft"), std::string::npos) << merged.output;
  for (const char* without_effect : {"--trust_remote_code has no effect in zerotune export",
                                     "--template (LLaMA-Factory) has no effect in zerotune export"})
    EXPECT_NE(merged.output.find(without_effect), std::string::npos) << merged.output;
  const fs::path out = dir_ / "saves/qwen3_sft_merged";  // the file's export_dir
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_TRUE(fs::is_regular_file(out / file)) << out / file;

  const CliRun by_flags = zerotune("export" + kTinyModel + " --adapter_name_or_path " + kAdapter.string() +
                                   " --merge_lora --output_dir by_flags");
  ASSERT_EQ(by_flags.exit_code, 0) << by_flags.output;
  EXPECT_EQ(largest_difference(out / "model.safetensors", dir_ / "by_flags/model.safetensors"), 0.0);
  EXPECT_GT(largest_difference(out / "model.safetensors", fs::path(testing::kTinyQwen) / "model.safetensors"), 0.0)
      << "the adapter changed no weight";
}

// LLaMA-Factory's merge file for a fully fine-tuned model names no adapter: the model is written as it is.
TEST_F(ArgumentsFileCommands, ExportWithoutAnAdapterWritesTheModelAsItIs) {
  const CliRun run = zerotune("export " + kFiles + "merge_qwen3_full_sft.yaml" + kTinyModel + " --export_dir plain");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(largest_difference(dir_ / "plain/model.safetensors", fs::path(testing::kTinyQwen) / "model.safetensors"),
            0.0);
}

TEST_F(ArgumentsFileCommands, ExportRefusesGptqQuantizationByName) {
  const CliRun run = zerotune("export " + kFiles + "merge_qwen3_gptq.yaml" + kTinyModel);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("merge_qwen3_gptq.yaml: --export_quantization_bit 4 (LLaMA-Factory): GPTQ quantization "
                            "at export is not supported by zerotune"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir_ / "saves/qwen3_gptq"));
}

// The inference file's adapter and template are the run's: the same tokens as those flags, others
// without them; a flag after the file overrides it.
TEST_F(ArgumentsFileCommands, GenerateReadsTheFilesAdapterAndTemplate) {
  const std::string adapter = " --adapter_name_or_path " + kAdapter.string();
  const std::string by_file = generate_ids(kFiles + "inference_qwen3_lora_sft.yaml" + kTinyModel);
  EXPECT_EQ(by_file, generate_ids(kTinyModel + adapter + " --template qwen3_nothink"));
  EXPECT_NE(by_file, generate_ids(kTinyModel + " --template qwen3_nothink")) << "the adapter was not applied";
  EXPECT_NE(by_file, generate_ids(kTinyModel + adapter)) << "the template was not applied";
  EXPECT_EQ(generate_ids(kFiles + "inference_qwen3_lora_sft.yaml" + kTinyModel + " --template qwen"),
            generate_ids(kTinyModel + adapter + " --template qwen"));
}

// LLaMA-Factory's `name=value` words after the file override it as the flags do
// (`llamafactory-cli chat|export FILE.yaml template=qwen`); without a file such a word is named
// with the flag to write instead.
TEST_F(ArgumentsFileCommands, NameValueWordsAfterTheFileOverrideIt) {
  const std::string file = kFiles + "inference_qwen3_lora_sft.yaml";
  const std::string model = " model_name_or_path=" + testing::kTinyQwen;
  EXPECT_EQ(generate_ids(file + model + " template=qwen"), generate_ids(file + kTinyModel + " --template qwen"));
  EXPECT_NE(generate_ids(file + model + " template=qwen"), generate_ids(file + kTinyModel)) << "template=qwen ignored";

  const CliRun merged = zerotune("export " + kFiles + "merge_qwen3_lora_sft.yaml" + model + " export_dir=by_word");
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "by_word/model.safetensors")) << merged.output;
  EXPECT_FALSE(fs::exists(dir_ / "saves/qwen3_sft_merged")) << "the file's export_dir was not overridden";

  const CliRun without_file = zerotune("generate" + model + " --prompt hi");
  EXPECT_EQ(without_file.exit_code, 2) << without_file.output;
  EXPECT_NE(without_file.output.find("'model_name_or_path=" + testing::kTinyQwen +
                                     "': LLaMA-Factory's name=value overrides an arguments file given first; without "
                                     "one write --model_name_or_path " +
                                     testing::kTinyQwen),
            std::string::npos)
      << without_file.output;
}

TEST_F(ArgumentsFileCommands, ChatAnswersAsWithTheFilesSettingsAsFlags) {
  std::ofstream(dir_ / "turns.txt") << "hello\n/exit\n";
  const std::string chat = " --device cpu --max_new_tokens 6 < turns.txt";
  const CliRun by_file = zerotune("chat " + kFiles + "inference_qwen3_lora_sft.yaml" + kTinyModel + chat);
  const CliRun by_flags = zerotune("chat" + kTinyModel + " --adapter_name_or_path " + kAdapter.string() +
                                   " --template qwen3_nothink" + chat);
  ASSERT_EQ(by_file.exit_code, 0) << by_file.output;
  ASSERT_EQ(by_flags.exit_code, 0) << by_flags.output;
  EXPECT_EQ(testing::chat_answers(by_file.output), testing::chat_answers(by_flags.output));
  EXPECT_EQ(testing::chat_answers(by_file.output).size(), 1u) << by_file.output;
}

// What zerotune cannot honour is refused by name, what changes nothing is warned about, and
// training's options are named as such; serve reads the file as the others do.
TEST_F(ArgumentsFileCommands, OptionsZerotuneDoesNotHonourAreNamed) {
  std::ofstream(dir_ / "beams.yaml") << "model_name_or_path: " << testing::kTinyQwen
                                     << "\ninfer_backend: vllm\nnum_beams: 4\nlearning_rate: 1.0e-4\n";
  for (const std::string command : {"generate", "serve"}) {
    const CliRun run = zerotune(command + " beams.yaml --device cpu" + (command == "generate" ? " --prompt hi" : ""));
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find("beams.yaml: --num_beams 4 (LLaMA-Factory): beam search is not supported by zerotune"),
              std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("beams.yaml: unknown option '--learning_rate'"), std::string::npos) << run.output;
  }
  std::ofstream(dir_ / "vllm.yaml") << "model_name_or_path: " << testing::kTinyQwen
                                    << "\ninfer_backend: vllm\nlora_rank: 8\ninfer_dtype: float32\n";
  const CliRun run = zerotune("generate vllm.yaml --device cpu --prompt hi --max_new_tokens 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--infer_backend (LLaMA-Factory) has no effect in zerotune generate: zerotune runs every "
                            "model on its own engine"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("--lora_rank (LLaMA-Factory) has no effect in zerotune generate: it configures training"),
            std::string::npos)
      << run.output;
}

// LLaMA-Factory's benchmark file (examples/train_lora/llama3_lora_eval.yaml, as published), which
// `llamafactory-cli eval` reads, given to evaluate (and the other commands): named as what it is,
// with what zerotune does instead, not as five unknown options.
TEST_F(ArgumentsFileCommands, BenchmarkFileIsNamed) {
  for (const std::string command : {"evaluate", "generate", "chat"}) {
    const CliRun run = zerotune(command + " " + kFiles + "llama3_lora_eval.yaml");
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find("llama3_lora_eval.yaml is a LLaMA-Factory benchmark file (`llamafactory-cli eval`: "
                              "task, n_shot, lang, save_dir)"),
              std::string::npos)
        << command << ":\n"
        << run.output;
    EXPECT_EQ(run.output.find("unknown option"), std::string::npos) << run.output;
  }
}

}  // namespace
}  // namespace zt
