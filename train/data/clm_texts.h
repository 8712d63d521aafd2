// The texts transformers' run_clm.py trains on, read from its data files as its
// `load_dataset(extension, data_files=...)` gives them: a .txt file's lines (the datasets text
// loader's, each with its line break unless keep_linebreaks is false), a .csv file's "text"
// column or else its first column (pandas' CSV rules: quoted fields may hold commas, quotes
// written twice and line breaks), a JSON or JSON Lines file's "text" field or else its first
// field. Every text is a plain-text sample (DataFormat::kText).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "train/data/dataset.h"

namespace zt::train {

// A .txt file's text as lines: with `keep_linebreaks` each line keeps its "\n" (a "\r\n" or
// "\r" break read as "\n", as Python's text mode reads it), the last one none when the file
// does not end with a break; without, no line keeps its break.
Dataset clm_text_lines(std::string_view text, const std::string& path, bool keep_linebreaks);

// A CSV file's text column: "text" when the header has it, else the first column. Blank lines
// are skipped (pandas' skip_blank_lines); a row with more fields than the header, an
// unterminated quote, text after a closing quote and an empty text field are errors naming
// `path` and the line.
Dataset clm_csv_texts(std::string_view text, const std::string& path);

// The texts of one data file by its extension (.txt, .csv, .json, .jsonl); another extension is
// refused, as run_clm refuses it.
Dataset load_clm_texts(const std::string& path, bool keep_linebreaks);

// run_clm's split of a training file without a validation file: the first `percentage` % of
// the rows (round(percentage × rows / 100), ties to even, as datasets' `train[:N%]`) evaluate,
// the rest train; returns {train, validation}.
std::pair<Dataset, Dataset> split_clm_validation(const Dataset& data, std::int64_t percentage);

}  // namespace zt::train
