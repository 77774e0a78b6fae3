// Documents of sender ID applications: the four files of a round, checked by content, capped
// in size, streamed to storage under names the service makes.

package senders

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/documents"
	"github.com/tuma-sms/tuma/transport/api"
)

const (
	maxDocumentBytes = 5 << 20 // each file
	// MaxDocumentsBody bounds a round's whole body: four files and the multipart framing.
	MaxDocumentsBody = 4*maxDocumentBytes + 64<<10
)

// documentType names a file's type from its first bytes: PDF, PNG or JPEG, else "".
func documentType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "application/pdf"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xFF\xD8\xFF")):
		return "image/jpeg"
	}
	return ""
}

// receiveDocuments streams the four files of an application round from parts to storage. Each must be a
// PDF, PNG or JPEG by content and at most 5 MB; a missing, repeated, empty or bad file is a
// 422 naming it, and whatever was stored for the request is deleted again.
func (h *Handler) receiveDocuments(ctx context.Context, parts Parts, account, sender uuid.UUID, round int) (docs []persistence.SenderDocument, err error) {
	defer func() {
		if err != nil {
			h.forgetDocuments(docs)
			docs = nil
		}
	}()
	kinds := map[string]bool{}
	for _, k := range persistence.DocumentKinds() {
		kinds[string(k)] = true
	}
	seen := map[string]bool{}
	err = parts(func(p api.FormPart) error {
		if !kinds[p.Name] {
			return nil // another field: skipped
		}
		if seen[p.Name] {
			return api.Invalid(api.FieldError{Field: p.Name, Message: "is given more than once"})
		}
		seen[p.Name] = true
		head, _ := p.Body.Peek(8)
		if len(head) == 0 {
			return api.Invalid(api.FieldError{Field: p.Name, Message: "is empty"})
		}
		ctype := documentType(head)
		if ctype == "" {
			return api.Invalid(api.FieldError{Field: p.Name, Message: "must be a PDF, PNG or JPEG file (checked by its content, not its name)"})
		}
		key := fmt.Sprintf("accounts/%s/senders/%s/%d/%s-%s", account, sender, round, p.Name, uuid.New())
		st, err := h.documents.Put(ctx, key, p.Body, maxDocumentBytes)
		if errors.Is(err, documents.ErrTooLarge) {
			return api.Invalid(api.FieldError{Field: p.Name, Message: "must be at most 5 MB"})
		}
		if err != nil {
			return err
		}
		docs = append(docs, persistence.SenderDocument{Kind: persistence.DocumentKind(p.Name), StorageKey: key,
			ContentType: ctype, Size: st.Size, SHA256: st.SHA256, Round: round})
		return nil
	})
	if err != nil {
		return docs, err
	}
	var missing []api.FieldError
	for _, k := range persistence.DocumentKinds() {
		if !seen[string(k)] {
			missing = append(missing, api.FieldError{Field: string(k), Message: "is required (a PDF, PNG or JPEG file of at most 5 MB)"})
		}
	}
	if len(missing) > 0 {
		return docs, api.Invalid(missing...)
	}
	return docs, nil
}
