// The chat page zerotune serve answers GET / with: serve/chat_page.html, compiled in.
#pragma once

#include <string_view>

namespace zt::serve {

std::string_view chat_page_html();

}  // namespace zt::serve
