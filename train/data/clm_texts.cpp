#include "train/data/clm_texts.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "runtime/error.h"
#include "train/data/chat_sample.h"
#include "train/data/json_records.h"

namespace zt::train {
namespace {

// One CSV record: its fields and the line it starts on.
struct CsvRow {
  std::vector<std::string> fields;
  std::size_t line = 0;
};

// pandas' C parser with its defaults (sep ",", quotechar '"', doublequote, no escape char):
// "\n", "\r\n" and "\r" end a record outside quotes; inside them they are part of the field.
class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& path) : text_(text), path_(path) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);  // pandas drops a UTF-8 BOM
  }

  // The next record, skipping blank lines; false at the end.
  bool next(CsvRow& row) {
    while (at_ < text_.size() && is_break(text_[at_])) skip_break();  // blank lines
    if (at_ >= text_.size()) return false;
    row = {{}, line_};
    for (;;) {
      row.fields.push_back(field());
      if (at_ >= text_.size()) return true;
      if (text_[at_] == ',') {
        ++at_;
        continue;
      }
      skip_break();  // the record's end
      return true;
    }
  }

 private:
  static bool is_break(char c) { return c == '\n' || c == '\r'; }
  void skip_break() {
    if (text_[at_] == '\r' && at_ + 1 < text_.size() && text_[at_ + 1] == '\n') ++at_;
    ++at_;
    ++line_;
  }
  [[noreturn]] void fail_here(std::size_t line, const std::string& what) const {
    fail(path_ + ":" + std::to_string(line) + ": " + what);
  }

  std::string field() {
    std::string out;
    if (at_ < text_.size() && text_[at_] == '"') {
      const std::size_t opened = line_;
      ++at_;
      for (;;) {
        if (at_ >= text_.size())
          fail_here(opened,
                    "a quoted field opened on this line is never closed (a \" is missing; a quote inside a "
                    "quoted field is written twice: \"\")");
        const char c = text_[at_];
        if (c == '"') {
          if (at_ + 1 < text_.size() && text_[at_ + 1] == '"') {
            out += '"';
            at_ += 2;
            continue;
          }
          ++at_;
          break;
        }
        if (c == '\r' || c == '\n') {  // a line break inside the quotes belongs to the field
          const bool crlf = c == '\r' && at_ + 1 < text_.size() && text_[at_ + 1] == '\n';
          out += crlf ? "\r\n" : std::string(1, c);
          at_ += crlf ? 2 : 1;
          ++line_;
          continue;
        }
        out += c;
        ++at_;
      }
      if (at_ < text_.size() && text_[at_] != ',' && !is_break(text_[at_]))
        fail_here(line_,
                  "text after a quoted field's closing quote; quote the whole field, and write a quote "
                  "inside it twice (\"\")");
      return out;
    }
    while (at_ < text_.size() && text_[at_] != ',' && !is_break(text_[at_])) out += text_[at_++];
    return out;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t at_ = 0;
  std::size_t line_ = 1;
};

// The values pandas' read_csv reads as missing (its default na_values, and the empty field):
// run_clm's tokenizer cannot take them.
bool is_missing(const std::string& value) {
  static const std::set<std::string> kMissing = {"",     "#N/A",   "#N/A N/A", "#NA",  "-1.#IND", "-1.#QNAN", "-NaN",
                                                 "-nan", "1.#IND", "1.#QNAN",  "<NA>", "N/A",     "NA",       "NULL",
                                                 "NaN",  "None",   "n/a",      "nan",  "null"};
  return kMissing.count(value) != 0;
}

}  // namespace

Dataset clm_text_lines(std::string_view text, const std::string& path, bool keep_linebreaks) {
  Dataset dataset;
  dataset.format = DataFormat::kText;
  while (!text.empty()) {
    const std::size_t end = text.find_first_of("\r\n");
    std::string line(text.substr(0, end));
    if (end == std::string_view::npos) {
      dataset.texts.push_back(std::move(line));
      break;
    }
    if (keep_linebreaks) line += '\n';
    dataset.texts.push_back(std::move(line));
    text.remove_prefix(end + (text.substr(end, 2) == "\r\n" ? 2 : 1));
  }
  ZT_REQUIRE(!dataset.texts.empty(), path + " holds no text");
  return dataset;
}

Dataset clm_csv_texts(std::string_view text, const std::string& path) {
  CsvReader reader(text, path);
  CsvRow header;
  ZT_REQUIRE(reader.next(header), path + " holds no CSV header (the first line names the columns)");
  std::size_t column = 0;
  for (std::size_t i = 0; i < header.fields.size(); ++i)
    if (header.fields[i] == "text") column = i;
  const bool named = column < header.fields.size() && header.fields[column] == "text";
  const std::string column_name =
      "column " + std::to_string(column + 1) + " (\"" + header.fields[column] + "\"" +
      (named ? ")" : ", the first: the header has no \"text\" column, and run_clm reads the first one then)");
  Dataset dataset;
  dataset.format = DataFormat::kText;
  for (CsvRow row; reader.next(row);) {
    ZT_REQUIRE(row.fields.size() <= header.fields.size(),
               path + ":" + std::to_string(row.line) + ": " + std::to_string(row.fields.size()) +
                   " fields, but the header names " + std::to_string(header.fields.size()) +
                   " columns; quote a field that holds a comma (\"a, b\")");
    const std::string value = column < row.fields.size() ? row.fields[column] : std::string();
    ZT_REQUIRE(!is_missing(value), path + ":" + std::to_string(row.line) + ": " + column_name + " is " +
                                       (value.empty() ? std::string("empty") : "\"" + value + "\"") +
                                       ", which pandas reads as a missing value and run_clm's tokenizer cannot "
                                       "take; give the row a text or remove it");
    dataset.texts.push_back(value);
  }
  ZT_REQUIRE(!dataset.texts.empty(), path + " holds a header but no rows");
  return dataset;
}

Dataset load_clm_texts(const std::string& path, bool keep_linebreaks) {
  if (path.ends_with(".txt")) return clm_text_lines(read_data_file(path), path, keep_linebreaks);
  if (path.ends_with(".csv")) {
    std::ifstream in(path, std::ios::binary);
    ZT_REQUIRE(in, "cannot read the data file " + path + ": check the path");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return clm_csv_texts(text, path);
  }
  ZT_REQUIRE(path.ends_with(".json") || path.ends_with(".jsonl"),
             path + ": run_clm's data files are .txt, .csv or .json (JSON Lines too); name the file by its format");
  const std::vector<JsonRecord> records = read_json_records(read_data_file(path), path);
  ZT_REQUIRE(!records.empty(), path + " holds no samples");
  ZT_REQUIRE(records.front().value.is_object() && !records.front().value.empty(),
             path + ": the first sample is not a JSON object with a field");
  // run_clm's column: "text", else the first one.
  const std::string column =
      records.front().value.contains("text") ? std::string("text") : records.front().value.begin().key();
  Dataset dataset;
  dataset.format = DataFormat::kText;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const SampleSource where{path, i, records[i].line};
    const auto& record = records[i].value;
    ZT_REQUIRE(record.is_object() && record.contains(column) && record[column].is_string(),
               where.str() + ": its \"" + column + "\" field" +
                   (column == "text" ? "" : " (the first field: there is no \"text\", and run_clm reads the first)") +
                   " is missing or not a string");
    dataset.texts.push_back(record[column].get<std::string>());
  }
  return dataset;
}

std::pair<Dataset, Dataset> split_clm_validation(const Dataset& data, std::int64_t percentage) {
  const auto rows = static_cast<double>(data.texts.size());
  // datasets' ReadInstruction, rounding "closest": Python's round(), ties to even.
  const auto cut = static_cast<std::size_t>(std::nearbyint(static_cast<double>(percentage) * rows / 100.0));
  Dataset train;
  Dataset validation;
  train.format = validation.format = DataFormat::kText;
  validation.texts.assign(data.texts.begin(), data.texts.begin() + static_cast<std::ptrdiff_t>(cut));
  train.texts.assign(data.texts.begin() + static_cast<std::ptrdiff_t>(cut), data.texts.end());
  return {train, validation};
}

}  // namespace zt::train
