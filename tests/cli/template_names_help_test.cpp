// Every command that takes --template lists in its --help exactly the names the chat-template
// registry accepts: a name accepted but missing from a help text fails here, and so does a name a
// help text lists that the registry does not accept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/process_test_util.h"
#include "text/chat_template/template_names.h"

namespace {

using zt::testing::CliRun;

class TemplateNamesHelp : public zt::testing::FolderTest {
 protected:
  // The lines of `zerotune <command> --help` from --template's up to the next flag's.
  std::string template_entry(const std::string& command) {
    const CliRun run = zt::testing::run_zerotune(command + " --help", dir_);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    std::istringstream in(run.output);
    std::string entry;
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
      const bool starts_flag = line.rfind("  --", 0) == 0;
      if (starts_flag) inside = line.rfind("  --template ", 0) == 0;
      if (inside) entry += line + "\n";
    }
    return entry;
  }
};

// Whether `text` holds `word` with no name character on either side.
bool has_word(const std::string& text, const std::string& word) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool before = at > 0 && name_char(text[at - 1]);
    const std::size_t end = at + word.size();
    const bool after = end < text.size() && name_char(text[end]);
    if (!before && !after) return true;
  }
  return false;
}

// The names a help entry lists: the words of its comma-separated lists (a word ending in a
// comma, or the word after one).
std::vector<std::string> listed_names(const std::string& entry) {
  std::istringstream in(entry);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const bool ends_comma = words[i].back() == ',';
    const bool after_comma = i > 0 && words[i - 1].back() == ',';
    if (ends_comma || after_comma) names.push_back(ends_comma ? words[i].substr(0, words[i].size() - 1) : words[i]);
  }
  return names;
}

TEST_F(TemplateNamesHelp, EveryCommandListsExactlyTheAcceptedNames) {
  const std::vector<std::string> accepted = zt::models::accepted_chat_template_names();
  ASSERT_FALSE(accepted.empty());
  for (const std::string command : {"train", "generate", "chat", "serve", "evaluate"}) {
    const std::string entry = template_entry(command);
    ASSERT_FALSE(entry.empty()) << "zerotune " << command << " --help has no --template entry";
    for (const std::string& name : accepted)
      EXPECT_TRUE(has_word(entry, name)) << name << " is accepted but zerotune " << command << " --help omits it:\n"
                                         << entry;
    const std::vector<std::string> listed = listed_names(entry);
    EXPECT_EQ(listed.size(), accepted.size()) << "zerotune " << command << " --help:\n" << entry;
    for (const std::string& name : listed)
      EXPECT_NE(std::find(accepted.begin(), accepted.end(), name), accepted.end())
          << "zerotune " << command << " --help lists '" << name << "', which --template refuses:\n"
          << entry;
  }
}

}  // namespace
