#include "models/peft/lora_targets.h"

#include <algorithm>
#include <regex>
#include <set>
#include <utility>

#include "runtime/error.h"
#include "runtime/terminal/text_list.h"

namespace zt::models {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// re.fullmatch(pattern, text). The pattern was checked when the adapter was read; a match
// that exhausts std::regex (a pathological pattern) is an error naming it.
bool full_match(const std::string& pattern, const std::string& text) {
  try {
    return std::regex_match(text, std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error& e) {
    fail("the module pattern '" + pattern + "' could not be matched against '" + text + "': " + e.what());
  }
}

// The layer index PEFT reads from a module path for layers_to_transform: the number after
// "<pattern>." (the last such, as Python's greedy .* finds it), any pattern when none is given.
std::optional<std::int64_t> layer_index(const LoraConfig& config, const std::string& path) {
  std::vector<std::string> patterns = config.layers_pattern;
  if (patterns.empty()) patterns.push_back("[^.]*");
  for (const std::string& pattern : patterns) {
    std::smatch match;
    try {
      if (std::regex_search(path, match, std::regex("^.*\\." + pattern + "\\.(\\d+)\\.", std::regex::ECMAScript)))
        return std::stoll(match[1].str());
    } catch (const std::regex_error& e) {
      fail("layers_pattern '" + pattern + "' could not be matched against '" + path + "': " + e.what());
    } catch (const std::out_of_range&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool excluded(const LoraConfig& config, const std::string& path) {
  if (!config.exclude_pattern.empty()) return full_match(config.exclude_pattern, path);
  return names_module(config.exclude_modules, path);
}

// "model.layers.0.self_attn.q_proj.weight" -> "model.layers.0.self_attn.q_proj".
std::string module_of(const std::string& parameter) { return parameter.substr(0, parameter.rfind('.')); }

// Every module of the model as named_modules() names it, less the root: the modules holding
// parameters, the modules holding those, and the LM head tied to the embedding (a module of
// its own in transformers, with no weight of its own in the checkpoint).
std::set<std::string> module_paths(const ParameterLayout& layout) {
  std::set<std::string> paths;
  for (const ParamSpec& spec : layout.all())
    for (std::string path = module_of(spec.name); !path.empty();
         path = path.find('.') == std::string::npos ? std::string() : module_of(path))
      paths.insert(path);
  if (!layout.lm_head && layout.embedding.name.starts_with("model.")) paths.insert("lm_head");
  return paths;
}

std::vector<std::string> first_layer_linear_names(const ParameterLayout& layout) {
  std::vector<std::string> names;
  if (layout.layers.empty()) return names;
  for (const auto& spec : layout.layers.front())
    if (spec && spec->kind == ParamKind::kMatrix) {
      const std::string path = module_of(spec->name);
      names.push_back(path.substr(path.rfind('.') + 1));
    }
  return names;
}

// What std::regex must not be given: libstdc++ parses a repeat count {m,n}, and a
// back-reference \N, into a long without an overflow check (undefined behaviour past 2^63),
// reading a number's digits before it looks at what follows them, and compiles and matches
// recursively, so a huge count or back-reference (even one the parser goes on to reject) or
// pattern is refused before it is compiled. Module paths need none of them.
constexpr unsigned long kMaxCount = 1000;

// The digits from `at` (none, or more than kMaxCount's, allowed for the caller to judge): the
// end of the run, and whether its number is over kMaxCount.
std::pair<std::size_t, bool> digit_run(const std::string& pattern, std::size_t at) {
  const std::size_t end = std::min(pattern.find_first_not_of("0123456789", at), pattern.size());
  const std::string digits = pattern.substr(at, end - at);
  return {end, digits.size() > 4 || (!digits.empty() && std::stoul(digits) > kMaxCount)};
}

std::optional<std::string> unsafe_pattern(const std::string& pattern) {
  constexpr std::size_t kMaxPattern = 4096;
  if (pattern.size() > kMaxPattern)
    return "longer than " + std::to_string(kMaxPattern) + " characters, more than a module path needs";
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      const auto [end, too_large] = digit_run(pattern, i + 1);
      if (too_large)
        return "a back-reference \\" + pattern.substr(i + 1, std::min<std::size_t>(end - i - 1, 40)) + "... over " +
               std::to_string(kMaxCount);
      i = end > i + 1 ? end - 1 : i + 1;  // an escaped character, or a back-reference's digits
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '{') {
      // The digits after the brace and, past a comma, the next ones: what the parser reads.
      std::size_t at = i + 1;
      for (int bound = 0; bound < 2; ++bound) {
        const auto [end, too_large] = digit_run(pattern, at);
        if (too_large)
          return "a repeat count {" + pattern.substr(i + 1, std::min<std::size_t>(end - i - 1, 40)) + "...} over " +
                 std::to_string(kMaxCount);
        if (end == pattern.size() || pattern[end] != ',') break;
        at = end + 1;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> module_pattern_error(const std::string& pattern) {
  if (std::optional<std::string> unsafe = unsafe_pattern(pattern)) return unsafe;
  try {
    std::regex compiled(pattern, std::regex::ECMAScript);
    (void)compiled;
    return std::nullopt;
  } catch (const std::regex_error& e) {
    return std::string(e.what());
  }
}

bool names_module(const std::vector<std::string>& names, const std::string& path) {
  for (const std::string& name : names)
    if (path == name || path.ends_with("." + name)) return true;
  return false;
}

bool lora_targets_module(const LoraConfig& config, const std::string& path) {
  if (excluded(config, path)) return false;
  if (!config.target_pattern.empty()) return full_match(config.target_pattern, path);
  if (contains(config.target_modules, path)) return true;  // a whole path: every layer it names
  const bool found = names_module(config.target_modules, path);
  if (!found || config.layers_to_transform.empty()) return found;
  const std::optional<std::int64_t> index = layer_index(config, path);
  return index && std::find(config.layers_to_transform.begin(), config.layers_to_transform.end(), *index) !=
                      config.layers_to_transform.end();
}

std::vector<std::array<bool, kLayerSlotCount>> lora_target_slots(const ModelConfig& model, const LoraConfig& config) {
  const ParameterLayout layout = parameter_layout(model);
  std::vector<std::array<bool, kLayerSlotCount>> slots(layout.layers.size());
  std::set<std::string> linear;
  bool any = false;
  for (std::size_t i = 0; i < layout.layers.size(); ++i)
    for (int slot = 0; slot < kLayerSlotCount; ++slot) {
      slots[i][slot] = false;
      const auto& spec = layout.layers[i][slot];
      if (!spec || spec->kind != ParamKind::kMatrix) continue;
      const std::string path = module_of(spec->name);
      linear.insert(path);
      slots[i][slot] = lora_targets_module(config, path);
      any = any || slots[i][slot];
    }
  const std::vector<std::string> names = first_layer_linear_names(layout);
  std::vector<std::string> unsupported;
  for (const std::string& path : module_paths(layout))
    if (!linear.contains(path) && lora_targets_module(config, path)) unsupported.push_back(path);
  if (!unsupported.empty()) {
    const std::size_t shown = std::min<std::size_t>(unsupported.size(), 5);
    std::string list = join_list(std::vector<std::string>(unsupported.begin(), unsupported.begin() + shown));
    if (shown < unsupported.size()) list += " and " + std::to_string(unsupported.size() - shown) + " more";
    fail("LoRA targets " + describe_lora_targets(config) + " match " + list +
         ", which zerotune puts no LoRA on: it adapts the linear modules of the decoder layers (" + join_list(names) +
         "), not the embedding, the LM head, norms or whole blocks");
  }
  if (!any) {
    std::string example;
    for (const auto& spec : layout.layers.empty() ? LayerSpecs{} : layout.layers.front())
      if (example.empty() && spec && spec->kind == ParamKind::kMatrix) example = module_of(spec->name);
    fail("LoRA targets " + describe_lora_targets(config) + " match no linear module of the " +
         architecture_name(model.arch) + " model; its modules are " + join_list(names) +
         (example.empty() ? std::string() : ", with whole paths such as " + example));
  }
  return slots;
}

std::string describe_lora_targets(const LoraConfig& config) {
  std::string text =
      config.target_pattern.empty()
          ? join_list(config.target_modules)
          : "'" + config.target_pattern + "' (target_modules as a regular expression over whole module paths)";
  if (!config.layers_to_transform.empty()) {
    std::vector<std::string> layers;
    for (std::int64_t layer : config.layers_to_transform) layers.push_back(std::to_string(layer));
    text += " in layers " + join_list(layers);
    if (!config.layers_pattern.empty()) text += " (layers_pattern " + join_list(config.layers_pattern) + ")";
  }
  if (!config.exclude_pattern.empty()) text += ", excluding modules matching '" + config.exclude_pattern + "'";
  if (!config.exclude_modules.empty()) text += ", excluding " + join_list(config.exclude_modules);
  return text;
}

}  // namespace zt::models
