;;; eglot_lsp.el --- drive `agent-rollout lsp' from a headless Emacs through eglot  -*- lexical-binding: t -*-

;; tests/test_lsp_emacs.py runs it as
;;   emacs --batch -Q -l eglot_lsp.el
;; with AR_SETUP (an Emacs Lisp file: docs/editors.md's eglot set-up, its
;; server command replaced by the test's), AR_FILE (a YAML config to open),
;; AR_TOML (a TOML one), AR_OUT (where the JSON report goes).
;;
;; Everything goes through eglot and Flymake as a user's session would: the
;; documented set-up starts the server (`eglot-ensure' on a mode hook), the
;; diagnostics are read from Flymake (buffer positions, as Emacs holds them),
;; the quick fix and fix-all are eglot's `eglot-code-actions', the hover is
;; eglot's eldoc function.  Batch Emacs runs no idle timers, and eglot sends
;; a buffer's changes and Flymake takes its reports on idle timers: `ar-idle'
;; does what the command loop does between two commands.

(require 'cl-lib)
(require 'json)
(require 'package)
(require 'url-parse)
(require 'url-util)

(defvar ar-report nil "The report, an alist, written to AR_OUT as JSON.")
(defvar ar-published 0 "How many textDocument/publishDiagnostics eglot has handled.")
(defvar ar-versions (make-hash-table :test #'equal)
  "File name -> the version of it the last diagnostics published were for.")
(defvar ar-timeout 30 "Seconds to wait for one answer of the server.")

(defun ar-put (key value)
  (setq ar-report (cons (cons key value) (assq-delete-all key ar-report))))

(defun ar-write ()
  (with-temp-file (getenv "AR_OUT")
    (let ((json-encoding-pretty-print nil))
      (insert (json-encode ar-report)))))

(defun ar-find-eglot ()
  "Make eglot loadable: built in (Emacs 29 and later) or Debian's elpa-eglot."
  (unless (locate-library "eglot")
    (setq package-user-dir (expand-file-name "elpa" user-emacs-directory)
          package-directory-list '("/usr/share/emacs/site-lisp/elpa"))
    (package-initialize))
  (locate-library "eglot"))

(defun ar-file-of (uri)
  (file-truename (url-unhex-string (url-filename (url-generic-parse-url uri)))))

(defun ar-idle ()
  "What Emacs does after a command: `post-command-hook', a redisplay, then its idle timers."
  (run-hooks 'post-command-hook)
  (run-window-configuration-change-hook)
  (dolist (timer (copy-sequence timer-idle-list))
    (when (memq timer timer-idle-list)
      (timer-event-handler timer))))

(cl-defun ar-wait (done what &optional seconds quietly)
  "Let the server's messages in until DONE returns non-nil, for SECONDS at most
\(`ar-timeout'): then fail, or with QUIETLY return."
  (let ((until (+ (float-time) (or seconds ar-timeout))))
    (while (not (funcall done))
      (when (> (float-time) until)
        (if quietly
            (cl-return-from ar-wait nil)
          (error "%s: nothing within %s s" what (or seconds ar-timeout))))
      (accept-process-output nil 0.02))))

(defun ar-wait-diagnostics (since what &optional settled)
  "Wait for diagnostics of the buffer as it is, published after SINCE of them.
Emacs goes idle first (eglot sends the changes), and after (Flymake takes them)."
  (ar-idle)
  (let ((version eglot--versioned-identifier)
        (file (file-truename buffer-file-name)))
    (ar-wait (lambda ()
               (let ((published (gethash file ar-versions)))
                 (and (> ar-published since) (numberp published) (>= published version))))
             what))
  (when settled
    ;; After a change of settings the server may ask eglot for them before it
    ;; publishes: the last diagnostics count, once the server has been quiet.
    (let ((count -1))
      (while (/= count ar-published)
        (setq count ar-published)
        (ar-wait (lambda () nil) what 0.5 t))))
  (ar-idle))

(defun ar-column (pos)
  "POS as (LINE . CHARACTER), both from 0: Emacs's characters, as it holds them."
  (save-excursion
    (goto-char pos)
    (cons (1- (line-number-at-pos pos t)) (- pos (line-beginning-position)))))

(defun ar-diagnostics ()
  "The buffer's Flymake diagnostics: where, type and text, in buffer order."
  (let ((found (sort (flymake-diagnostics) (lambda (a b) (< (flymake-diagnostic-beg a)
                                                             (flymake-diagnostic-beg b))))))
    (vconcat
     (mapcar (lambda (d)
               (let ((beg (ar-column (flymake-diagnostic-beg d)))
                     (end (ar-column (flymake-diagnostic-end d))))
                 `((line . ,(car beg)) (col . ,(cdr beg))
                   (end_line . ,(car end)) (end_col . ,(cdr end))
                   (type . ,(symbol-name (flymake-diagnostic-type d)))
                   (text . ,(flymake-diagnostic-text d)))))
             found))))

(defun ar-text ()
  (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))

(defun ar-server-output ()
  "Into the report: the servers' standard error and the tail of eglot's message logs."
  (let ((stderr "") (events ""))
    (dolist (buffer (buffer-list))
      (let ((name (buffer-name buffer)))
        (cond ((string-match-p "\\*EGLOT.*stderr\\*" name)
               (setq stderr (concat stderr "--- " name "\n" (with-current-buffer buffer (ar-text)))))
              ((string-match-p "\\*EGLOT.*events\\*" name)
               (let ((text (with-current-buffer buffer (ar-text))))
                 (setq events (concat events "--- " name "\n"
                                      (substring text (max 0 (- (length text) 20000))))))))))
    (ar-put 'server_stderr stderr)
    (ar-put 'events events)))

(defun ar-hover ()
  "What eglot's eldoc hover function gives at point."
  (let (got)
    (eglot-hover-eldoc-function (lambda (info &rest _) (setq got (or info ""))))
    (ar-wait (lambda () got) "hover")
    got))

(defun ar-open (file)
  "Visit FILE as `find-file' does and run the command loop once: eglot starts."
  (let ((buffer (find-file-noselect file)))
    (switch-to-buffer buffer)
    (ar-idle)
    (ar-wait (lambda () (bound-and-true-p eglot--managed-mode)) (format "eglot managing %s" file))
    buffer))

(defun ar-run ()
  (unless (ar-find-eglot)
    (ar-put 'missing "eglot")
    (throw 'ar-done nil))
  (unless (fboundp 'yaml-mode)
    ;; Emacs 28 has no YAML mode (yaml-mode is a package; yaml-ts-mode is Emacs 29's):
    ;; a stand-in of that name, so that the documented set-up is what runs.
    (define-derived-mode yaml-mode text-mode "YAML" "A stand-in for the yaml-mode package.")
    (add-to-list 'auto-mode-alist '("\\.ya?ml\\'" . yaml-mode)))
  (load (getenv "AR_SETUP") nil t t)
  (require 'eglot)
  (ar-put 'eglot (locate-library "eglot"))
  (advice-add 'eglot-handle-notification :after
              (lambda (_server method &rest params)
                (when (eq method 'textDocument/publishDiagnostics)
                  (puthash (ar-file-of (plist-get params :uri)) (plist-get params :version)
                           ar-versions)
                  (cl-incf ar-published)))
              '((name . ar-count)))
  (setq eglot-sync-connect ar-timeout eglot-connect-timeout ar-timeout)

  ;; Open the YAML config: the documented hook starts the server.
  (let ((since ar-published))
    (with-current-buffer (ar-open (getenv "AR_FILE"))
      (ar-wait-diagnostics since "diagnostics after opening")
      (ar-put 'mode (symbol-name major-mode))
      (ar-put 'opened (ar-diagnostics))

      ;; The documented settings, sent as eglot sends them on a change.
      (setq since ar-published)
      (setq-default eglot-workspace-configuration '(:agent-rollout (:strict t)))
      (eglot-signal-didChangeConfiguration (eglot-current-server))
      (ar-wait-diagnostics since "diagnostics after a change of settings" t)
      (ar-put 'strict (ar-diagnostics))
      (setq-default eglot-workspace-configuration nil)
      (setq since ar-published)
      (eglot-signal-didChangeConfiguration (eglot-current-server))
      (ar-wait-diagnostics since "diagnostics after settings undone" t)
      (ar-put 'not_strict (ar-diagnostics))

      ;; A quick fix: at the unknown key, as M-x eglot-code-actions there does.
      (goto-char (point-min))
      (search-forward "rollout_fucn")
      (goto-char (match-beginning 0))
      (let ((actions (eglot-code-actions (point) nil "quickfix")))
        (ar-put 'quickfix_titles (vconcat (mapcar (lambda (a) (plist-get a :title)) actions))))
      (setq since ar-published)
      (eglot-code-actions (point) nil "quickfix" t)
      (ar-put 'quick_fixed (ar-text))
      (ar-wait-diagnostics since "diagnostics after the quick fix")
      (ar-put 'after_quickfix (ar-diagnostics))

      ;; Fix all: the documented command.
      (setq since ar-published)
      (call-interactively 'agent-rollout-fix-all)
      (ar-put 'fixed (ar-text))
      (ar-wait-diagnostics since "diagnostics after fixing all")
      (ar-put 'after_fix_all (ar-diagnostics))

      ;; Hover on the key the quick fix wrote.
      (goto-char (point-min))
      (search-forward "rollout_func")
      (goto-char (1+ (match-beginning 0)))
      (ar-put 'hover (ar-hover))))

  ;; A TOML config: the same server, which eglot 1.9 tells it is YAML (the set-up has
  ;; one server for every format; the server reads the file's name).
  (let ((since ar-published))
    (with-current-buffer (ar-open (getenv "AR_TOML"))
      (ar-wait-diagnostics since "diagnostics of the TOML file")
      (ar-put 'toml_mode (symbol-name major-mode))
      (ar-put 'toml (ar-diagnostics))
      (ar-put 'servers (apply #'+ (mapcar #'length (hash-table-values eglot--servers-by-project))))
      (ar-server-output)))
  ;; Shut both down as eglot does (shutdown, then exit), timing the answers; their
  ;; buffers are kept for `ar-server-output' should this fail.
  (let ((times nil))
    (dolist (server (apply #'append (hash-table-values eglot--servers-by-project)))
      (let ((start (float-time)))
        (eglot-shutdown server nil ar-timeout t)
        (push (- (float-time) start) times)))
    (ar-put 'shutdown_seconds (vconcat times))))

(setq native-comp-deferred-compilation nil
      inhibit-message nil
      make-backup-files nil
      create-lockfiles nil
      auto-save-default nil)
(condition-case err
    (catch 'ar-done (ar-run))
  (error
   (ar-put 'error (error-message-string err))
   (ignore-errors (ar-server-output))))
(ar-write)
(kill-emacs 0)

;;; eglot_lsp.el ends here
