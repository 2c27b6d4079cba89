"""An HTTP client for tests/test_serve.sh, on the standard library alone.

  serve_client.py PORT GET|POST PATH [BODY]   status, then the body (with $AUTH, if set, as
                                              the Authorization header)
  serve_client.py PORT raw FILE               FILE's bytes as the request; status and body
  serve_client.py PORT head FILE              the same; the answer's head (status line, headers)
  serve_client.py PORT stream PATH BODY       a streamed answer: its text, then
                                              "finish=REASON events=N done=1|0", and with a
                                              usage chunk " usage=P+C choices=0 nulls=N"
                                              (llama-server's own /completion: REASON its
                                              last event's stop_type)
  serve_client.py PORT stream PATH BODY FILE  ... with the chunks' log-probabilities joined into
                                              FILE in a whole answer's shape, and the text
                                              followed by "logprob chunks=N aligned=A" (A: the
                                              chunks whose token ids are those they list)
  serve_client.py PORT messages PATH BODY     Anthropic's stream, its protocol checked: its text,
                                              then "events=... stop=REASON/SEQUENCE usage=I+O
                                              (I: input and cache-read tokens)
                                              thinking=N problems=none" (deltas in a row: one)
  serve_client.py PORT drop PATH BODY         reads the first event, then hangs up
  serve_client.py PORT ndjson PATH BODY       ollama's stream of lines: its text, then
                                              "done_reason=R lines=N eval_count=E"
                                              (FILE after BODY: the lines' logprobs joined)
  serve_client.py PORT many PATH BODY...      every request sent before any answer is read, on a
                                              connection each; a line per answer, in order: its
                                              text as a JSON string (a stream's joined), or
                                              "status N ..."; a BODY
                                              that begins "hangup:" is sent, then hung up on
  serve_client.py PORT choices PATH BODY      OpenAI's n: each choice's text (a stream's chunks
                                              joined by index) as a JSON string, a line each by
                                              index, then "finishes=F,F... usage=P+C done=N
                                              order=O" (O: the indexes as the chunks came,
                                              repeats run together); llama-server's answers
                                              (/completion: an object, a list, or a stream of
                                              them) the same, F their stop_type, and then
                                              " counts=E+P,..." (tokens_evaluated and
                                              tokens_predicted, each answer's)
  serve_client.py get FILE KEY...             a value of a JSON answer (keys and list indexes)
  serve_client.py logprobs FILE RUNFILE       an answer's logprobs against run --json --logprobs's
                                              lines: "same N" (N tokens), or the first difference
"""
import http.client
import json
import os
import socket
import sys


def answer(sock):
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b" ")[1].decode() if b" " in head else "none"
    return status, body.decode("utf-8", "replace")


def text_of(status, body):
    """An answer's text as a JSON string: a stream's pieces joined, or the whole answer's."""
    if status != "200":
        return "status %s %s" % (status, body)
    def text(o):  # OpenAI's first choice, a response's message, or llama-server's content
        if o.get("type") == "response.output_text.delta":
            return o["delta"]
        if "type" in o:  # the Responses stream's other events
            return ""
        if "output" in o:
            return "".join(p["text"] for it in o["output"] if it["type"] == "message"
                           for p in it["content"])
        if "choices" not in o:
            return o.get("content") or ""
        choice = o["choices"][0]
        part = choice.get("message") or choice.get("delta") or {}
        return choice.get("text") or part.get("content") or ""
    if body.startswith("data: ") or body.startswith("event: "):
        events = [l[6:] for l in body.split("\n") if l.startswith("data: ") and l[6:] != "[DONE]"]
        return json.dumps("".join(text(json.loads(e)) for e in events))
    return json.dumps(text(json.loads(body)))


def many(port, path, bodies):
    socks = []
    for body in bodies:
        hangup = body.startswith("hangup:")
        body = body[len("hangup:"):] if hangup else body
        s = socket.create_connection(("127.0.0.1", port), timeout=300)
        data = body.encode()
        s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
        if hangup:
            s.close()
        socks.append(None if hangup else s)
    for s in socks:
        print("(hung up)" if s is None else text_of(*answer(s)))


def choices(port, path, body):
    s = socket.create_connection(("127.0.0.1", port), timeout=300)
    data = body.encode()
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
    status, body = answer(s)
    if status != "200":
        print("status %s %s" % (status, body))
        return
    texts, finishes, usage, done, order, counts = {}, {}, None, 0, [], {}
    def take(c):
        i = c["index"]
        part = c.get("message") or c.get("delta") or {}
        texts[i] = texts.get(i, "") + (c.get("text") or part.get("content") or c.get("content") or "")
        if c.get("finish_reason"):
            finishes[i] = c["finish_reason"]
        if c.get("stop"):  # llama-server's own answer: its last object says why and its counts
            finishes[i] = c["stop_type"]
            counts[i] = "%d+%d" % (c["tokens_evaluated"], c["tokens_predicted"])
        if not order or order[-1] != i:
            order.append(i)
    def take_all(event):  # OpenAI's choices; llama-server's one object, or a list of them
        for c in event if isinstance(event, list) else event.get("choices", [event]):
            take(c)
    if body.startswith("data: ") or body.startswith("event: "):
        for line in body.split("\n"):
            if not line.startswith("data: "):
                continue
            if line[6:] == "[DONE]":
                done += 1
                continue
            event = json.loads(line[6:])
            take_all(event)
            usage = event.get("usage") or usage
    else:
        event = json.loads(body)
        take_all(event)
        usage = event.get("usage") if isinstance(event, dict) else None
    for i in sorted(texts):
        print(json.dumps(texts[i]))
    print("finishes=%s usage=%s done=%d order=%s%s" % (
        ",".join(finishes.get(i, "-") for i in sorted(texts)),
        "%d+%d" % (usage["prompt_tokens"], usage["completion_tokens"]) if usage else "-",
        done, ",".join(map(str, order)),
        " counts=" + ",".join(counts.get(i, "-") for i in sorted(texts)) if counts else ""))


def logprobs(answer_file, run_file):
    """(id, logprob, [(id, logprob)...]) per token, from each side."""
    answer = json.load(open(answer_file))
    # llama-server's own /completion's list, or ollama's of the same shape
    listed = answer.get("completion_probabilities", answer.get("logprobs"))
    if isinstance(listed, list):
        got = [(t["id"], t["logprob"], [(u["id"], u["logprob"]) for u in t["top_logprobs"]])
               for t in listed]
        return compare(got, run_file)
    choice = answer["choices"][0]
    lp = choice["logprobs"]
    if "content" in lp:  # the chat API's
        got = [(t["id"], t["logprob"], [(u["id"], u["logprob"]) for u in t["top_logprobs"]]) for t in lp["content"]]
    else:  # the completions API's: top ones keyed by text, here the ids (a preset's)
        got = [(i, l, [(int(k), v) for k, v in top.items()])
               for i, l, top in zip(choice["tokens"], lp["token_logprobs"], lp["top_logprobs"])]
    compare(got, run_file)


def compare(got, run_file):
    want = []
    for line in open(run_file):
        t = json.loads(line)
        if "stats" in t:
            continue
        want.append((t["id"], t["logprob"], [(u["id"], u["logprob"]) for u in t.get("top", [])]))
    if got == want and got:
        print("same %d" % len(got))
    else:
        diff = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
        print("differ at token %d of %d/%d: server %s, run %s" % (diff, len(got), len(want),
              got[diff] if diff < len(got) else None, want[diff] if diff < len(want) else None))


def named_events(c, path, body):
    """POSTs body: the stream's (event name, data) pairs, or None after printing the status of
    an answer that is not a stream."""
    c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200 or r.getheader("Content-Type") != "text/event-stream":
        print("status %d %s" % (r.status, r.read().decode("utf-8", "replace")))
        return None

    def pairs():
        name = None
        for line in r:
            line = line.decode("utf-8").rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                yield name, json.loads(line[6:])
                name = None
    return pairs()


def anthropic_stream(c, path, body):
    """Anthropic's stream: each event named as its data's type, in the protocol's order (a
    message_start; content blocks, each opened, given deltas of its own kind, closed, indexes
    0, 1, ...; a tool_use block's input_json_delta pieces a JSON object once closed; a
    message_delta; a message_stop last); its text and thinking joined."""
    stream = named_events(c, path, body)
    if stream is None:
        return
    events, problems = [], []
    texts, kinds, open_block, stop, usage = {}, {}, None, None, None
    for name, data in stream:
        kind = data.get("type")
        if kind != name:
            problems.append("event %s carries %s" % (name, kind))
        if not events and kind != "message_start":
            problems.append("first event %s" % kind)
        if events and events[-1] == "message_stop":
            problems.append("%s after message_stop" % kind)
        if kind != "content_block_delta" or events[-1] != "content_block_delta":
            events.append(kind)
        if kind == "message_start":
            usage = data["message"]["usage"]
        elif kind == "content_block_start":
            i = data["index"]
            if open_block is not None or i != len(kinds):
                problems.append("block %d opened (open: %s)" % (i, open_block))
            open_block, kinds[i] = i, data["content_block"]["type"]
            texts[i] = ""
        elif kind == "content_block_delta":
            i, d = data["index"], data["delta"]
            want = {"text": "text_delta", "thinking": "thinking_delta",
                    "tool_use": "input_json_delta"}.get(kinds.get(i))
            if i != open_block or d["type"] != want:
                problems.append("delta %s to block %d (open: %s)" % (d["type"], i, open_block))
            texts[i] += d.get("text", d.get("thinking", d.get("partial_json", "")))
        elif kind == "content_block_stop":
            if data["index"] != open_block:
                problems.append("block %d closed (open: %s)" % (data["index"], open_block))
            elif kinds[open_block] == "tool_use":  # its input, whole once closed
                try:
                    if not isinstance(json.loads(texts[open_block]), dict):
                        problems.append("block %d's input is no object" % open_block)
                except ValueError:
                    problems.append("block %d's input is no JSON" % open_block)
            open_block = None
        elif kind == "message_delta":
            stop = data["delta"]["stop_reason"], data["delta"]["stop_sequence"]
            usage = dict(usage, **data["usage"])
    if events[-1:] != ["message_stop"] or open_block is not None:
        problems.append("no message_stop, or a block left open")
    text = "".join(texts[i] for i in sorted(texts) if kinds[i] == "text")
    thinking = "".join(texts[i] for i in sorted(texts) if kinds[i] == "thinking")
    sys.stdout.write(text)
    print("\nevents=%s stop=%s usage=%d+%d thinking=%d problems=%s" % (
        ",".join(events), stop and "%s/%s" % stop,
        usage["input_tokens"] + usage.get("cache_read_input_tokens", 0) if usage else -1,
        usage["output_tokens"] if usage else -1, len(thinking), "; ".join(problems) or "none"))


def responses_stream(c, path, body):
    """OpenAI's Responses stream: each event named as its data's type and numbered 0, 1, ...;
    response.created and response.in_progress first; output items added at indexes 0, 1, ...,
    one open at a time, each given deltas of its own kind (a message's after its content part
    is added) and done with the text its deltas joined; response.completed (or .incomplete)
    last, its output the items done. Prints the message's text, then a line of the events, the
    final status, usage and items, and the problems found."""
    stream = named_events(c, path, body)
    if stream is None:
        return
    events, problems, items, texts, done, final = [], [], [], {}, [], None
    open_item, part_added = None, False
    for name, data in stream:
        kind = data.get("type")
        if kind != name or data.get("sequence_number") != len(events):
            problems.append("event %s carries %s, number %s" % (name, kind, data.get("sequence_number")))
        if final:
            problems.append("%s after the response's end" % kind)
        first = ["response.created", "response.in_progress"]
        if len(events) < 2 and kind != first[len(events)]:
            problems.append("event %d is %s" % (len(events), kind))
        events.append(kind)
        i = data.get("output_index")
        if kind == "response.output_item.added":
            if open_item is not None or i != len(items):
                problems.append("item %d added (open: %s)" % (i, open_item))
            items.append(data["item"]["type"])
            open_item, part_added, texts[i] = i, False, ""
        elif kind == "response.content_part.added":
            part_added = i == open_item and items[i] == "message"
        elif kind in ("response.output_text.delta", "response.reasoning_text.delta",
                      "response.function_call_arguments.delta"):
            want = {"message": "response.output_text.delta",
                    "reasoning": "response.reasoning_text.delta",
                    "function_call": "response.function_call_arguments.delta"}[items[i]]
            if i != open_item or kind != want or (items[i] == "message" and not part_added):
                problems.append("%s to item %d (open: %s)" % (kind, i, open_item))
            texts[i] += data["delta"]
        elif kind in ("response.output_text.done", "response.reasoning_text.done"):
            if data["text"] != texts.get(i):
                problems.append("item %d done with another text" % i)
        elif kind == "response.function_call_arguments.done":
            if data["arguments"] != texts.get(i):
                problems.append("call %d done with other arguments" % i)
        elif kind == "response.output_item.done":
            if i != open_item:
                problems.append("item %d done (open: %s)" % (i, open_item))
            done.append(data["item"])
            open_item = None
        elif kind in ("response.completed", "response.incomplete"):
            final = data["response"]
    if not final or open_item is not None:
        problems.append("no response.completed, or an item left open")
    elif final["output"] != done:
        problems.append("the final output is not the items done")
    message = "".join(texts[i] for i in sorted(texts) if items[i] == "message")
    sys.stdout.write(message)
    usage = final and final.get("usage") or {}
    short = [e[len("response."):] for k, e in enumerate(events) if k == 0 or e != events[k - 1]]
    print("\nevents=%s status=%s usage=%s+%s items=%s problems=%s" % (
        ",".join(short), final and final["status"], usage.get("input_tokens"),
        usage.get("output_tokens"), ",".join(items), "; ".join(problems) or "none"))


def main():
    if sys.argv[1] == "logprobs":
        logprobs(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1] == "get":
        v = json.load(open(sys.argv[2]))
        for k in sys.argv[3:]:
            v = v[int(k)] if isinstance(v, list) else v[k]
        print(json.dumps(v) if isinstance(v, (list, dict)) else v)
        return
    port, what = int(sys.argv[1]), sys.argv[2]
    if what == "many":
        many(port, sys.argv[3], sys.argv[4:])
        return
    if what == "choices":
        choices(port, sys.argv[3], sys.argv[4])
        return
    if what == "head":
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        s.sendall(open(sys.argv[3], "rb").read())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        print(data.partition(b"\r\n\r\n")[0].decode().replace("\r\n", "\n"))
        return
    if what == "raw":
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        try:
            s.sendall(open(sys.argv[3], "rb").read())
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered before reading it all
        status, body = answer(s)
        print(status)
        print(body)
        return
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    if what == "ndjson":
        c.request("POST", sys.argv[3], body=sys.argv[4])
        r = c.getresponse()
        if r.status != 200 or r.getheader("Content-Type") != "application/x-ndjson":
            print("status %d %s" % (r.status, r.read().decode("utf-8", "replace")))
            return
        text, lines, last, probs = "", 0, {}, []
        for line in r:
            last = json.loads(line)
            lines += 1
            text += last["message"]["content"] if "message" in last else last["response"]
            probs += last.get("logprobs", [])
        if len(sys.argv) > 5:  # the lines' log-probabilities joined, as a whole answer's
            json.dump({"logprobs": probs}, open(sys.argv[5], "w"))
        sys.stdout.write(text)
        print("\ndone_reason=%s lines=%d eval_count=%s done=%s" % (
            last.get("done_reason"), lines, last.get("eval_count"), last.get("done")))
        return
    if what == "messages":
        return anthropic_stream(c, sys.argv[3], sys.argv[4])
    if what == "responses":
        return responses_stream(c, sys.argv[3], sys.argv[4])
    if what in ("GET", "POST", "DELETE"):
        body = sys.argv[4] if len(sys.argv) > 4 else None
        headers = {"Content-Type": "application/json"}
        if os.environ.get("AUTH"):
            headers["Authorization"] = os.environ["AUTH"]
        if os.environ.get("XKEY"):  # Anthropic's clients' header
            headers["x-api-key"] = os.environ["XKEY"]
        c.request(what, sys.argv[3], body=body, headers=headers)
        r = c.getresponse()
        print(r.status)
        print(r.read().decode("utf-8", "replace"))
        return
    c.request("POST", sys.argv[3], body=sys.argv[4], headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200 or r.getheader("Content-Type") != "text/event-stream":
        print("status %d %s" % (r.status, r.read().decode("utf-8", "replace")))
        return
    text, finish, events, done, usage, nulls = "", None, 0, 0, None, 0
    # the chunks' log-probabilities joined, as a whole answer would give them (argv[5]: where)
    whole = {"content": [], "tokens": [], "token_logprobs": [], "top_logprobs": []}
    probs, lp_chunks, aligned = [], 0, 0
    for line in r:
        line = line.decode("utf-8")
        if not line.startswith("data: "):
            continue
        events += 1
        if what == "drop":
            c.close()
            print("dropped after %d event" % events)
            return
        data = line[6:].strip()
        if data == "[DONE]":
            done = 1
            continue
        event = json.loads(data)
        if event.get("usage"):  # stream_options.include_usage's last chunk: no choices
            usage = "%d+%d" % (event["usage"]["prompt_tokens"], event["usage"]["completion_tokens"])
            usage += " choices=%d" % len(event["choices"])
            continue
        if "choices" not in event:  # llama-server's own: content, and stop on the last
            text += event["content"]
            finish = event["stop_type"] if event["stop"] else finish
            probs += event.get("completion_probabilities", [])
            lp_chunks += bool(event.get("completion_probabilities"))
            continue
        nulls += "usage" in event
        choice = event["choices"][0]
        if choice.get("logprobs"):
            lp_chunks += 1
            for k, v in choice["logprobs"].items():
                whole[k] += v
            # a preset's: the chunk's ids are the tokens it lists
            listed = choice["logprobs"].get("tokens", [])
            aligned += "text" in choice and choice["text"].split() == listed
        text += choice.get("delta", {}).get("content", "") if "delta" in choice else choice["text"]
        finish = choice["finish_reason"] or finish
    if len(sys.argv) > 5:  # the joined log-probabilities, in a whole answer's shape
        if probs:
            joined = {"completion_probabilities": probs}
        elif whole["content"]:
            joined = {"choices": [{"logprobs": {"content": whole["content"]}}]}
        else:  # the completions API's (a preset's token texts are its ids)
            ids = [int(t) if t.isdigit() else None for t in whole["tokens"]]
            joined = {"choices": [{"tokens": ids, "logprobs": {k: whole[k] for k in (
                "tokens", "token_logprobs", "top_logprobs")}}]}
        json.dump(joined, open(sys.argv[5], "w"))
        text += "\nlogprob chunks=%d aligned=%d" % (lp_chunks, aligned)
    sys.stdout.write(text)
    print("\nfinish=%s events=%d done=%d%s" % (finish, events, done,
                                               " usage=%s nulls=%d" % (usage, nulls) if usage else ""))


main()
