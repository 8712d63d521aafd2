#include "train/deepspeed/config_block.h"

#include "runtime/ascii_lower.h"
#include "runtime/terminal/closest_name.h"
#include "train/deepspeed/config_value.h"

namespace zt::train {
namespace {

bool is_auto(const nlohmann::json& value) { return value.is_string() && value.get<std::string>() == "auto"; }

// Whether `a` becomes `b` by one typing slip: a letter added, dropped, replaced, or two
// neighbours swapped (zero_optimisation, train_batch_sise, optimzer, optimzier), or by letter
// case alone (Zero_Optimization).
bool one_edit_apart(const std::string& a, const std::string& b) {
  if (a == b) return false;
  if (ascii_lower(a) == ascii_lower(b)) return true;
  if (a.size() == b.size()) {
    std::size_t first = 0;
    while (a[first] == b[first]) ++first;
    if (a.compare(first + 1, std::string::npos, b, first + 1, std::string::npos) == 0) return true;  // replaced
    return first + 1 < a.size() && a[first] == b[first + 1] && a[first + 1] == b[first] &&
           a.compare(first + 2, std::string::npos, b, first + 2, std::string::npos) == 0;  // swapped
  }
  const std::string& longer = a.size() > b.size() ? a : b;
  const std::string& shorter = a.size() > b.size() ? b : a;
  if (longer.size() != shorter.size() + 1) return false;
  std::size_t first = 0;
  while (first < shorter.size() && longer[first] == shorter[first]) ++first;
  return longer.compare(first + 1, std::string::npos, shorter, first, std::string::npos) == 0;  // one more
}

}  // namespace

ConfigBlock::ConfigBlock(const nlohmann::json& node, std::string path, std::string source, BlockKind kind)
    : node_(node), path_(std::move(path)), source_(std::move(source)), kind_(kind) {
  ZT_REQUIRE(node_.is_object(), where("") + " must be a JSON object, got " + node_.dump());
}

const nlohmann::json* ConfigBlock::value_of(const std::string& key) const {
  known_.insert(key);
  const auto it = node_.find(key);
  if (it == node_.end() || it->is_null()) return nullptr;
  if (kind_ == BlockKind::kModel && is_auto(*it)) return nullptr;
  return &*it;
}

void ConfigBlock::refuse_unfilled_auto(const std::string& key, const nlohmann::json& value,
                                       const std::string& expected) const {
  if (!is_auto(value)) return;
  fail(where(key) +
       " is \"auto\", which only the keys HF Trainer fills from its flags take (the batch sizes, "
       "gradient_clipping, optimizer.params lr/betas/eps/weight_decay, scheduler.params "
       "warmup_min_lr/warmup_max_lr/warmup_num_steps/total_num_steps, fp16/bf16.enabled, and "
       "zero_optimization's bucket sizes); DeepSpeed takes this one as written: set " +
       expected + " there");
}

ConfigBlock ConfigBlock::child(const std::string& key, BlockKind kind) {
  used_.insert(key);
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* value = value_of(key);
  return ConfigBlock(value ? *value : empty, path_of(key), source_, kind);
}

void ConfigBlock::ignore(const std::string& key, const std::string& reason, std::vector<std::string>& warnings) {
  used_.insert(key);
  if (has(key)) warnings.push_back(where(key) + " " + reason + "; ignored");
}

bool ConfigBlock::is_comment(const std::string& key) {
  return key.rfind('_', 0) == 0 || key.rfind("//", 0) == 0 || key.rfind('#', 0) == 0 ||
         ascii_lower(key).find("comment") != std::string::npos;
}

std::vector<std::string> ConfigBlock::unread() const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : node_.items())
    if (!used_.count(key) && !is_comment(key)) keys.push_back(key);
  return keys;
}

std::optional<std::string> ConfigBlock::misspelled(const std::string& key) const {
  std::vector<std::string> known(known_.begin(), known_.end());
  known.insert(known.end(), used_.begin(), used_.end());
  return closest_name(key, known);
}

std::optional<std::string> ConfigBlock::mistyped(const std::string& key) const {
  std::set<std::string> known = known_;
  known.insert(used_.begin(), used_.end());
  for (const std::string& candidate : known)
    if (!inert_.count(candidate) && one_edit_apart(key, candidate)) return candidate;
  return std::nullopt;
}

std::string ConfigBlock::with_suggestion(const std::string& key) const {
  const std::optional<std::string> known = misspelled(key);
  return path_of(key) + (known ? " (did you mean " + path_of(*known) + "?)" : "");
}

void ConfigBlock::note_unread(const std::string& reason, std::vector<std::string>& warnings) const {
  std::string mistypings;
  std::size_t count = 0;
  for (const std::string& key : unread()) {
    if (const std::optional<std::string> meant = mistyped(key))
      mistypings += (count++ == 0 ? "" : ", ") + path_of(key) + " (did you mean " + path_of(*meant) + "?)";
    else
      warnings.push_back(source_ + ": " + with_suggestion(key) + " " + reason + "; ignored");
  }
  if (count == 0) return;
  const bool one = count == 1;
  fail(source_ + ": " + mistypings + (one ? " is not a DeepSpeed setting" : " are not DeepSpeed settings") +
       "; ignoring " + (one ? "it" : "them") + " would run without what " + (one ? "it was" : "they were") +
       " meant to set: correct the spelling");
}

void ConfigBlock::refuse_unknown(const std::string& owner) const {
  const std::vector<std::string> keys = unread();
  if (keys.empty()) return;
  std::string names;
  for (const std::string& key : keys) names += (names.empty() ? "" : ", ") + with_suggestion(key);
  const bool one = keys.size() == 1;
  fail(source_ + ": " + names + (one ? " is not a setting of " : " are not settings of ") + owner +
       "; DeepSpeed refuses " + (one ? "it" : "them") + " too: remove " + (one ? "it" : "them") +
       " or check the spelling");
}

std::string ConfigBlock::path_of(const std::string& key) const {
  return path_.empty() ? key : key.empty() ? path_ : path_ + "." + key;
}

std::string ConfigBlock::where(const std::string& key) const {
  const std::string full = path_of(key);
  return full.empty() ? source_ : source_ + ": " + full;
}

std::optional<bool> ConfigBlock::to_bool(const nlohmann::json& value) const {
  if (kind_ == BlockKind::kModel) return lax_bool(value);
  return value.is_boolean() ? std::optional<bool>(value.get<bool>()) : std::nullopt;
}

std::optional<std::int64_t> ConfigBlock::to_int(const nlohmann::json& value) const {
  return kind_ == BlockKind::kModel ? lax_int(value) : whole_number(value);
}

std::optional<double> ConfigBlock::to_double(const nlohmann::json& value) const {
  if (kind_ == BlockKind::kModel) return lax_float(value);
  return value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt;
}

std::optional<std::string> ConfigBlock::to_string(const nlohmann::json& value) {
  return value.is_string() ? std::optional<std::string>(value.get<std::string>()) : std::nullopt;
}

std::optional<std::vector<double>> ConfigBlock::to_numbers(const nlohmann::json& value) const {
  if (!value.is_array()) return std::nullopt;
  std::vector<double> numbers;
  for (const nlohmann::json& item : value) {
    std::optional<double> number = to_double(item);
    if (!number) return std::nullopt;
    numbers.push_back(*number);
  }
  return numbers;
}

}  // namespace zt::train
