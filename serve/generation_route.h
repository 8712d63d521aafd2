// POST /v1/chat/completions and /v1/completions once the body is read: the request goes to
// the engine loop and the answer comes back whole, or streamed as server-sent events while
// it is generated. A streaming client that goes away cancels its request in the engine. Each
// request is logged when it ends: id, tokens in and out, time to first token, tokens/s.
#pragma once

#include <httplib.h>

#include "serve/request_parsing.h"
#include "serve/routes.h"

namespace zt::serve {

// Throws ApiError for a request that cannot run (unknown model, too long for the context).
void respond_with_generation(RouteContext& context, const ApiRequest& request, httplib::Response& response);

}  // namespace zt::serve
