-- Drives `agent-rollout lsp` from a headless Neovim (0.7 and later): the test
-- (tests/test_lsp_neovim.py) and the benchmark (benches/bench_lsp.py) run it as
--   nvim --headless --clean -n -i NONE -c "luafile neovim_lsp.lua"
-- with AR_FILE (the config to open), AR_CMD (the server command, JSON), AR_OUT
-- (where the JSON report goes), AR_MODE ("test" or "bench"; AR_EDITS for bench)
-- and, for the test, AR_FIX_ALL (the fix-all command of docs/editors.md).
local out_path = vim.env.AR_OUT
local report = { events = {} }

local function finish()
  local handle = io.open(out_path, "w")
  handle:write(vim.fn.json_encode(report))
  handle:close()
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  vim.lsp.set_log_level("ERROR")
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.AR_FILE))
  local buf = vim.api.nvim_get_current_buf()
  local changed = 0
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    buffer = buf,
    callback = function()
      changed = changed + 1
    end,
  })
  local started = vim.loop.hrtime()
  local id = vim.lsp.start_client({
    name = "agent-rollout",
    cmd = vim.fn.json_decode(vim.env.AR_CMD),
    root_dir = vim.fn.fnamemodify(vim.env.AR_FILE, ":h"),
    flags = { debounce_text_changes = 0 },
  })
  vim.lsp.buf_attach_client(buf, id)

  local function diagnostics()
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(found, {
        lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
        severity = d.severity, code = d.code, source = d.source, message = d.message,
      })
    end
    return found
  end

  local function wait_change(since, what)
    if not vim.wait(60000, function() return changed > since end, 1) then
      error("no diagnostics " .. what .. " within 60 s")
    end
  end

  wait_change(0, "after opening")
  report.first_ms = (vim.loop.hrtime() - started) / 1e6
  report.opened = diagnostics()

  if vim.env.AR_MODE == "bench" then
    -- Edit one line back and forth; time each edit until its diagnostics arrive.
    local line = vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1]
    local times = {}
    for i = 1, tonumber(vim.env.AR_EDITS) do
      local text = (i % 2 == 1) and line:gsub("rollout_func", "rollout_fucn") or line
      local before = changed
      local t0 = vim.loop.hrtime()
      vim.api.nvim_buf_set_lines(buf, 2, 3, false, { text })
      wait_change(before, "after edit " .. i)
      table.insert(times, (vim.loop.hrtime() - t0) / 1e6)
    end
    report.edit_ms = times
    vim.lsp.stop_client(id)
    return
  end

  -- The typo on line 3 fixed by hand: its diagnostic goes.
  local before = changed
  local line = vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1]
  vim.api.nvim_buf_set_lines(buf, 2, 3, false, { (line:gsub("rollout_fucn", "rollout_func")) })
  wait_change(before, "after an edit")
  report.edited = diagnostics()

  -- Fix all: the command docs/editors.md gives (AR_FIX_ALL), as typed. On 0.7 it
  -- lists the actions in vim.ui.select; the user picks the first (and only) one.
  report.fix_all_items = {}
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      table.insert(report.fix_all_items, opts.format_item and opts.format_item(item) or item)
    end
    on_choice(items[1], 1)
  end
  -- The cursor on a line with a fixable diagnostic: its quick fix is not to be listed.
  vim.api.nvim_win_set_cursor(0, { 5, 2 })
  before = changed
  vim.cmd(vim.env.AR_FIX_ALL)
  wait_change(before, "after fixing all")
  report.fix_all = report.fix_all_items[1]
  report.fixed_lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  report.fixed = diagnostics()

  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = 2, character = 4 },
  }, 30000)
  for _, answer in pairs(hover or {}) do
    report.hover = answer.result and answer.result.contents and answer.result.contents.value
  end
  vim.lsp.stop_client(id)
end)

if not ok then
  report.error = tostring(err)
end
finish()
